#!/usr/bin/env python3
"""The archive's ratios: each variant's FP8 rows (version 2) against the tree's in the same call,
and in call D the bf16 and FP8 rows with the merge kernel against the merge inside."""
import csv
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def rows(name, impls):
    out = {}
    for r in csv.DictReader(open(os.path.join(HERE, name))):
        if r['impl'] in impls:
            out[(r['impl'], int(r['batch']), int(r['seq_kv']), int(r['seq_q']))] = float(r['ms'])
    return out


FP8 = ('l10-v2-fp8-causal',)
for call, names in (('B', ('t', 'p', 'q')), ('C', ('t', 'r', 's'))):
    tab = {v: rows(f'peers-{call.lower()}-{v}.csv', FP8) for v in names}
    print(f'call {call}: version 2 (FP8 cache, causal, dim 128), ms, and the tree / variant')
    for k in sorted(tab['t']):
        t = tab['t'][k]
        cells = ' '.join(f'{v} {tab[v][k]:.4f} ({t / tab[v][k]:.3f}x)' for v in names[1:])
        print(f'  batch {k[1]:3d} keys {k[2]:5d} tokens {k[3]:2d}: t {t:.4f} | {cells}')
print('call D: the merge kernel (m) against the merge inside (t), two libraries each, ms')
d = {v: rows(f'peers-d-{v}.csv', ('l10-v1-draft-causal', 'l10-v2-fp8-causal',
                                  'l10-v4-wgmma-causal')) for v in ('t1', 't2', 'm1', 'm2')}
for k in sorted(d['t1']):
    t = (d['t1'][k] + d['t2'][k]) / 2
    m = (d['m1'][k] + d['m2'][k]) / 2
    print(f'  {k[0]:22s} batch {k[1]:3d} keys {k[2]} tokens {k[3]}: inside {d["t1"][k]:.4f} '
          f'{d["t2"][k]:.4f} | kernel {d["m1"][k]:.4f} {d["m2"][k]:.4f} | {t / m:.3f}x')
for call in ('e', 'f'):
    print(f'call {call.upper()}: the sequences cut into k chunks by the plan (L10_SPLITS; tree: '
          'the rule), ms, two processes where two are given')
    e = {}
    for name in sorted(os.listdir(HERE)):
        if not name.startswith(f'peers-{call}-k'):
            continue
        k = name[len(f'peers-{call}-k'):-len('.csv')].split('-')[0]
        for key, ms in rows(name, ('l10-v1-draft-causal', 'l10-v2-fp8-causal',
                                   'l10-v4-wgmma-causal')).items():
            e.setdefault(key, {}).setdefault(k, []).append(ms)
    for key in sorted(e):
        cells = ' | '.join(f'{k} ' + ' '.join(f'{ms:.4f}' for ms in e[key][k])
                           for k in ('tree', '1', '2', '3', '4', '6') if k in e[key])
        print(f'  {key[0]:22s} batch {key[1]:3d} keys {key[2]} tokens {key[3]}: {cells}')
