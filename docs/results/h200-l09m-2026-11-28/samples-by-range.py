import sys
rows=[l.split(None,3) for l in open(sys.argv[1]) if not l.startswith('#')]
rows=[(int(a,16),int(e),int(s),t.strip() if len(r)>3 else '') for r in rows for a,e,s,t in [ (r+[''])[:4] ]]
marks=[int(x,16) for x in sys.argv[2].split(',')]
names=sys.argv[3].split(',')
tot=sum(r[2] for r in rows)
for i in range(len(marks)-1):
    s=sum(r[2] for r in rows if marks[i]<=r[0]<marks[i+1])
    n=sum(1 for r in rows if marks[i]<=r[0]<marks[i+1] and r[1]>0)
    print('%-28s %05x-%05x %8d %5.1f%%  instr %d'%(names[i],marks[i],marks[i+1],s,100*s/tot,n))
s=sum(r[2] for r in rows if not (marks[0]<=r[0]<marks[-1])); print('%-28s %8d %5.1f%%'%('outside',s,100*s/tot)); print('total',tot)
