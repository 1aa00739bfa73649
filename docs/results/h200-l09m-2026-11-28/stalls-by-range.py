import csv,gzip,sys,collections
rows=list(csv.reader(gzip.open(sys.argv[1],'rt')))
h=rows[1]; ai=h.index('Address')
cols=[i for i,c in enumerate(h) if c.startswith('stall_') and 'Not Issued' not in c]
marks=[int(x,16) for x in sys.argv[2].split(',')]; names=sys.argv[3].split(',')
agg=[collections.Counter() for _ in names]
for r in rows[2:]:
    if len(r)<=max(cols): continue
    a=int(r[ai],16)&0xfffff
    for i in range(len(marks)-1):
        if marks[i]<=a<marks[i+1]:
            for c in cols: agg[i][h[c][6:]]+=int(r[c] or 0)
for n,c in zip(names,agg):
    t=sum(c.values())
    print('%-22s %7d  '%(n,t)+'  '.join('%s %d'%(k,v) for k,v in c.most_common(6)))
