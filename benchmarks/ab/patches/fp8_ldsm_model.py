#!/usr/bin/env python3
"""Host model of fp8_ldsm_transpose.patch (session 44): V tiles of the fp8 attention kernel
transposed with ldmatrix.x4.trans / stmatrix.x4 (16-bit pairs) and two byte permutes per matrix
pair, against the V^T layout the kernel's P V GEMM reads (128- or 64-byte swizzle, keys of each
16-key group in the P fragment's order, vt_key). Models the 8 x 8 b16 fragment rule (lane t:
row t / 4, elements 2 (t % 4), 2 (t % 4) + 1; .trans the transpose) and counts 16-byte bank-group
collisions within each 8-row phase. Prints mismatches and conflicts (both 0 when the mapping
holds) for head_dim 128 (128-key tiles) and 256 (64-key tiles)."""
import random
def vt_key(e): return 8*((e%4)//2) + 2*(e//4) + e%2
def run(BN, HD):
    RAWCB = BN*128
    V = [[random.randrange(256) for _ in range(HD)] for _ in range(BN)]
    raw = [0]*(BN*HD)
    for k in range(BN):
        for d in range(HD):
            cb, dd = d//128, d%128; ch = dd//16
            raw[cb*RAWCB + k*128 + ((ch ^ (k&7))<<4) + dd%16] = V[k][d]
    rowb = BN
    def vt_addr(d, g):
        sw = (d & 7) if BN == 128 else ((d>>1)&3)
        return d*rowb + ((g ^ sw)<<4)
    exp = [None]*(HD*BN)
    for d in range(HD):
        for g in range(BN//16):
            for e in range(16):
                exp[vt_addr(d,g)+e] = V[g*16+vt_key(e)][d]
    out = [None]*(HD*BN)
    G = BN//16; units = G*(HD//32)
    conflicts = 0
    for u in range(units):
        g, db = u % G, u // G
        cb, c0 = db//4, (db%4)*2
        # ldmatrix.x4.trans: lane l -> row address of matrix l//8, row l%8
        addrs = []
        for l in range(32):
            m, r = l//8, l%8
            key = g*16 + (m&1)*8 + r
            ch = c0 + (m>>1)
            addrs.append(cb*RAWCB + key*128 + ((ch ^ (key&7))<<4))
        for m in range(4):  # bank check per 8-row phase
            banks = [((addrs[m*8+r])//16) % 8 for r in range(8)]
            conflicts += 8 - len(set(banks))
        # each thread's registers: matrix m, transposed 8x8 b16
        regs = [[None]*4 for _ in range(32)]
        for t in range(32):
            for m in range(4):
                q, c = t%4, t//4
                a0 = addrs[m*8 + 2*q]; a1 = addrs[m*8 + 2*q + 1]
                regs[t][m] = [raw[a0+2*c], raw[a0+2*c+1], raw[a1+2*c], raw[a1+2*c+1]]
        def prmt(a, b, sel):
            src = a + b
            return [src[(sel >> (4*i)) & 7] for i in range(4)]
        st = [[None]*4 for _ in range(32)]
        for t in range(32):
            r = t//4
            s0, s1 = (0x6420, 0x7531) if r < 4 else (0x7531, 0x6420)
            st[t][0] = prmt(regs[t][0], regs[t][1], s0)
            st[t][1] = prmt(regs[t][0], regs[t][1], s1)
            st[t][2] = prmt(regs[t][2], regs[t][3], s0)
            st[t][3] = prmt(regs[t][2], regs[t][3], s1)
        # stmatrix.x4: lane l gives row address of matrix l//8 row l%8
        saddr = []
        for l in range(32):
            j, r = l//8, l%8
            par = (j & 1) ^ (1 if r >= 4 else 0)
            d = cb*128 + (c0 + (j>>1))*16 + 2*r + par
            saddr.append(vt_addr(d, g))
        for j in range(4):
            banks = [((saddr[j*8+r]))//16 % 8 for r in range(8)]
            conflicts += 8 - len(set(banks))
        for t in range(32):
            r, q = t//4, t%4
            for j in range(4):
                a = saddr[j*8 + r] + 4*q
                for i in range(4): out[a+i] = st[t][j][i]
    bad = sum(1 for i in range(HD*BN) if out[i] != exp[i])
    print(f"BN {BN} HD {HD}: {units} units, mismatches {bad}, bank conflicts {conflicts}")
run(128, 128); run(64, 256)
