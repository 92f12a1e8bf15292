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
def ve(mask,x,S):
    ia=np.nonzero(mask)[0]; num=den=0.0
    for s in range(0,len(ia)-S+1,S):
        a0=ia[s];a1=ia[s+S-1]; st=x[a0:a1+1][~mask[a0:a1+1]]; k=len(st)
        if not k: continue
        a=x[ia[s:s+S]]; d=a[:,None]-st[None,:]*EPS
        U=(d<0).sum()+0.5*(d==0).sum(); num+=U-S*k/2; den+=S*k*(S+k+1)/12
    return num/math.sqrt(den)
def nn_d(mask,x,K):
    # baseline: median of log of K stop jobs before and K after
    lx=np.log(x); ia=np.nonzero(mask)[0]; isp=np.nonzero(~mask)[0]
    pos=np.searchsorted(isp, ia)
    ds=[]
    for j,i in enumerate(ia):
        p=pos[j]; lo=max(0,p-K); hi=min(len(isp),p+K)
        nb=isp[lo:hi]
        if len(nb)<2: continue
        ds.append(lx[i]-np.median(lx[nb])-math.log(EPS))
    return np.array(ds)
def batch_z(v,B=16):
    nb=len(v)//B; v=v[:nb*B].reshape(nb,B).mean(1)
    return -v.mean()/(v.std(ddof=1)/math.sqrt(nb))
def trim(d,c=3):
    s=1.4826*np.median(np.abs(d-np.median(d))); return np.clip(d,-c*s,c*s)
rng=np.random.default_rng(2)
N=int(sys.argv[1])
for hpk in ['small','bert','frcnn720','gemm']:
    out={}
    for cost in [1.0,1.0201]:
        zs={k:[] for k in ['ve16','ve4','nnT1','nnT2','nnS1','nnS2']}
        for hp,lp,tr in cells:
            if hp!=hpk: continue
            n=len(tr)
            for run in range(10):
                L=2*N+64; st=rng.integers(n); x=tr[(st+np.arange(L))%n].copy()
                mask=rng.random(L)<0.5; x[mask]*=cost
                zs['ve16'].append(ve(mask,x,16)); zs['ve4'].append(ve(mask,x,4))
                for K in (1,2):
                    d=nn_d(mask,x,K)
                    zs['nnT%d'%K].append(batch_z(trim(d)))
                    zs['nnS%d'%K].append(batch_z((d>0).astype(float)-0.5+0*d))
        for k,v in zs.items(): out[(k,cost)]=(np.mean(v),np.std(v),np.mean(np.array(v)>=2.5))
    print(hpk,N)
    for k in ['ve16','ve4','nnT1','nnT2','nnS1','nnS2']:
        a=out[(k,1.0)]; b=out[(k,1.0201)]
        print("  %-5s costless z %.2f sd %.2f P %.2f | at bound z %.2f sd %.2f P %.3f"%(k,*a,*b))
