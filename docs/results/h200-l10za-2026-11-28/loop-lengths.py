import re,sys
txt=open(sys.argv[1]).read()
funcs=re.split(r'\n\s+Function : ',txt)
for f in funcs[1:]:
    name=f.split('\n',1)[0].strip()
    if 'pair' in name: continue
    ins=[]
    for l in f.split('\n'):
        m=re.match(r'\s+/\*([0-9a-f]+)\*/\s+(.*?);',l)
        if m: ins.append((int(m.group(1),16),m.group(2)))
    addr=[a for a,_ in ins]
    for i,(a,t) in enumerate(ins):
        m=re.search(r'BRA (?:`\(\.L_x_\d+\) )?0x([0-9a-f]+)',t)
        if not m: continue
        tgt=int(m.group(1),16)
        if tgt>=a: continue
        j=addr.index(tgt) if tgt in addr else None
        if j is None: continue
        body=[x for _,x in ins[j:i+1]]
        hg=sum('HGMMA' in x for x in body)
        if hg==0: continue
        cnt=lambda k: sum(k in x for x in body)
        print(name[:30], 'loop', hex(tgt), hex(a), 'instr', len(body), 'HGMMA',hg,'LDGSTS',cnt('LDGSTS'),'MUFU',cnt('MUFU'),'BAR',cnt('BAR.SYNC'),'LDG.',cnt('LDG.E'))
