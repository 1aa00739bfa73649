import sys,collections
f=sys.argv[1]; names=[n.split(',') for n in sys.argv[2].split(';')]; s0,s1=int(sys.argv[3]),int(sys.argv[4])
d=collections.defaultdict(dict)
for l in open(f):
    if not l.startswith('TL'): continue
    _,bl,r,st,e,v=l.split()
    if int(bl)==0: d[(int(r),int(st))][int(e)]=int(v)
base=d[(0,s0)][0]
ev=[]
for (r,st),m in d.items():
    for e,v in m.items():
        if v-base>=0 and v-base<=(s1-s0)*4800: ev.append((v-base,r,st,names[r][e] if e<len(names[r]) else str(e)))
for v,r,st,n in sorted(ev): print('%6d  %s%s t%-3d %s'%(v,'    '*r,'wg%d'%r if r<2 else ['prodQ','prodDQ'][r-2],st,n))
