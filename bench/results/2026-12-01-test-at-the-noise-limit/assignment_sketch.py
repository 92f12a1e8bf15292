"""Sketch (numpy, outside the rule): the blocked Mann-Whitney test of guarded under four ways of
assigning jobs to stop and the arm at share 0.5 (a coin per job, strict alternation, random-order
pairs, blocks of 4 with 2 stop jobs at random places), over the stop jobs of the H200 learnings of
2026-11-29, 16 runs a trace: mean z of a costless arm, z at the bound (1.0201x) and at 1.03x.
    python3 bench/results/2026-12-01-test-at-the-noise-limit/assignment_sketch.py ARM_JOBS   (from the repository root)"""
import sys, glob, os, math
import numpy as np
sys.path.insert(0, '.')
from bench.gpu import raw_record
folders = sorted(set(os.path.dirname(p) for p in glob.glob('bench/results/2026-11-29*/**/raw.json*', recursive=True)))
cells=[]
for fo in folders:
    rec = raw_record.load(fo)
    for seg in rec.get("segments", []):
        r = seg.get("hp_result") or {}
        if seg.get("setup") != "guarded_learn" or not r.get("ok") or not r.get("arms"): continue
        stop = [ms for ms, arm in zip(r["svc_ms"], r["arms"]) if arm == "stop"]
        if len(stop) < 256: continue
        cells.append((seg['hp'], seg['lp'], np.array(stop)))
EPS=1.0201
def ve(mask,x,S=16):
    ia=np.nonzero(mask)[0]; num=den=0.0
    for s in range(0,len(ia)-S+1,S):
        a0=ia[s];a1=ia[s+S-1]; st=x[a0:a1+1][~mask[a0:a1+1]]; k=len(st)
        if not k: continue
        a=x[ia[s:s+S]]; d=a[:,None]-st[None,:]*EPS
        U=(d<0).sum()+0.5*(d==0).sum(); num+=U-S*k/2; den+=S*k*(S+k+1)/12
    return num/math.sqrt(den)
def alt_pairs(x, B=32, stat='sign'):
    # strict alternation: even = stop, odd = arm. d_i = log a_i - mean(log s_{i-1}, log s_{i+1}) - log EPS
    lx=np.log(x); n=len(x)
    idx=np.arange(1,n-1,2)
    d=lx[idx]-(lx[idx-1]+lx[idx+1])/2-math.log(EPS)
    if stat=='sign': v=(d<0).astype(float)-0.5
    elif stat=='trim':
        s=1.4826*np.median(np.abs(d-np.median(d))); v=-np.clip(d,-3*s,3*s)
    nb=len(v)//B; bm=v[:nb*B].reshape(nb,B).mean(1)
    return bm.mean()/(bm.std(ddof=1)/math.sqrt(nb))
def alt_wsr(x, B=32):
    # signed rank within batches of B pairs, z summed over batches (exact null per batch: independent batches)
    lx=np.log(x); n=len(x); idx=np.arange(1,n-1,2)
    d=-(lx[idx]-(lx[idx-1]+lx[idx+1])/2-math.log(EPS))
    nb=len(d)//B; num=den=0.0
    for b in range(nb):
        db=d[b*B:(b+1)*B]; r=np.argsort(np.argsort(np.abs(db)))+1
        W=r[db>0].sum(); num+=W-B*(B+1)/4; den+=B*(B+1)*(2*B+1)/24
    return num/math.sqrt(den)
rng=np.random.default_rng(4)
N=int(sys.argv[1])
def design(kind, L):
    if kind=='iid': return rng.random(L)<0.5
    if kind=='alt': return np.arange(L)%2==1
    if kind=='pairs':
        m=np.zeros(L,bool); first=rng.random(L//2+1)<0.5
        for p in range(L//2):
            m[2*p+(1 if first[p] else 0)]=True
        return m
    if kind=='quads':
        m=np.zeros(L,bool)
        for q in range(L//4):
            pos=rng.choice(4,2,replace=False); m[4*q+pos]=True
        return m
kinds=['iid','alt','pairs','quads']
for hpk in ['small','bert','frcnn720','gemm']:
    res={}
    for cost in [1.0,1.0201,1.03]:
        zs={k:[] for k in kinds}
        for hp,lp,tr in cells:
            if hp!=hpk: continue
            n=len(tr)
            for run in range(16):
                L=2*N+64; st=rng.integers(n); x=tr[(st+np.arange(L))%n].copy()
                for k in kinds:
                    m=design(k,L); xx=x.copy(); xx[m]*=cost; zs[k].append(ve(m,xx))
        for k,v in zs.items(): res[(k,cost)]=(np.mean(v),np.std(v),np.mean(np.array(v)>=2.5))
    print(hpk,N)
    for k in kinds:
        a=res[(k,1.0)]; b=res[(k,1.0201)]; c=res[(k,1.03)]
        print("  %-6s costless z %.2f sd %.2f P %.2f | bound z %.2f sd %.2f P %.3f | 1.03 P %.3f"%(k,*a,*b,c[2]))
