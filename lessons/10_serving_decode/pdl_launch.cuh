/**
 * @file pdl_launch.cuh
 * @brief The launch configuration of a programmatic dependent launch, which versions 1, 3 and 4
 *        use to chain their kernels (the merge behind the main kernel, the cascade's passes).
 *
 * Two kernels in a row on a stream normally leave a gap: the second grid is placed only after the
 * first has finished and its writes are flushed, a microsecond or more in which the GPU runs
 * nothing. A launch with the attribute `cudaLaunchAttributeProgrammaticStreamSerialization` may be
 * placed as soon as every block of the kernel before it has run `griddepcontrol.launch_dependents`
 * (or exited, for a kernel that never runs it); the second kernel then runs `griddepcontrol.wait`
 * before it reads anything the first one wrote, and that wait returns once the first grid has
 * finished and its writes are visible. So the order of the two kernels' memory is kept and the
 * launch's latency hides under the first kernel's tail. A CUDA graph captured from such a stream
 * keeps the edge as a programmatic one. On a GPU before sm_90 the attribute must be left off: the
 * kernels' `griddepcontrol` instructions are sm_90's.
 */
#ifndef L10_PDL_LAUNCH_CUH
#define L10_PDL_LAUNCH_CUH

#include <cuda_runtime.h>

/** A launch of @p grid blocks of @p block threads with @p smem bytes of dynamic shared memory on
 * @p stream, a programmatic dependent of the launch before it when @p pdl (else a plain one), for
 * cudaLaunchKernelEx() or cudaLaunchKernelExC(). @p attr is the attribute's storage: it must live
 * until the launch call. */
static inline cudaLaunchConfig_t l10_launch_config(dim3 grid, dim3 block, size_t smem,
                                                   cudaStream_t stream, int pdl,
                                                   cudaLaunchAttribute *attr) {
  attr->id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr->val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg;
  cfg.gridDim = grid, cfg.blockDim = block, cfg.dynamicSmemBytes = smem, cfg.stream = stream;
  cfg.attrs = attr, cfg.numAttrs = pdl ? 1 : 0;
  return cfg;
}

#endif /* L10_PDL_LAUNCH_CUH */
