import sys,collections,statistics as S
f=sys.argv[1]; nev=int(sys.argv[2]); names=sys.argv[3].split(',')
d=collections.defaultdict(dict)
for l in open(f):
    if not l.startswith('TL'): continue
    _,bl,r,st,e,v=l.split(); d[(int(bl),int(r),int(st))][int(e)]=int(v)
for bl in (0,1):
  for r in (0,1):
    steps=[st for st in range(8,60) if (bl,r,st) in d and (bl,r,st+1) in d and 0 in d[(bl,r,st+1)]]
    if not steps: continue
    per=[d[(bl,r,st+1)][0]-d[(bl,r,st)][0] for st in steps]
    out=[]
    for e in range(1,nev):
        xs=[d[(bl,r,st)][e]-d[(bl,r,st)][0] for st in steps if e in d[(bl,r,st)]]
        if xs: out.append('%s %d'%(names[e],S.median(xs)))
    print('blk%d wg%d step %d |'%(bl,r,S.median(per)),' '.join(out))
