import csv,gzip,sys,re
rows=list(csv.reader(gzip.open(sys.argv[1],'rt')))
h=rows[1]; ai=h.index('Address'); si=h.index('Source'); ni=h.index('Warp Stall Sampling (All Samples)'); ei=h.index('Instructions Executed')
out=open(sys.argv[2],'w')
tot=0
for r in rows[2:]:
    if len(r)<=ei: continue
    a=int(r[ai],16)&0xfffff
    out.write('%05x %10s %7s  %s\n'%(a,r[ei],r[ni],r[si].strip())); tot+=int(r[ni] or 0)
print(sys.argv[1],'samples',tot)
