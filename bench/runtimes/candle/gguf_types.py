# list GGUF tensor dtypes (minimal GGUF v2/v3 header parser)
import struct, collections, sys
f = open(sys.argv[1], 'rb')
def rd(fmt): return struct.unpack('<' + fmt, f.read(struct.calcsize('<' + fmt)))[0]
def rs(): return f.read(rd('Q')).decode('utf8', 'replace')
SZ = {0:'B',1:'b',2:'H',3:'h',4:'I',5:'i',6:'f',7:'?',10:'Q',11:'q',12:'d'}
def rv(t):
    if t == 8: return rs()
    if t == 9:
        it = rd('I'); n = rd('Q'); return [rv(it) for _ in range(n)] if it in (8, 9) else f.read(struct.calcsize('<'+SZ[it]) * n) and n
    return rd(SZ[t])
assert f.read(4) == b'GGUF'; ver = rd('I'); nt = rd('Q'); nkv = rd('Q')
for _ in range(nkv):
    k = rs(); v = rv(rd('I'))
    if k.startswith('general.file_type') or k.startswith('llama.'): print(k, v)
names = {0:'F32',1:'F16',2:'Q4_0',3:'Q4_1',6:'Q5_0',7:'Q5_1',8:'Q8_0',9:'Q8_1',10:'Q2_K',11:'Q3_K',12:'Q4_K',13:'Q5_K',14:'Q6_K',15:'Q8_K',30:'BF16'}
c = collections.Counter(); other = []
for _ in range(nt):
    name = rs(); nd = rd('I'); dims = [rd('Q') for _ in range(nd)]; t = rd('I'); rd('Q')
    c[names.get(t, t)] += 1
    if 'blk.' not in name: other.append((name, dims, names.get(t, t)))
print(dict(c)); print(other)
