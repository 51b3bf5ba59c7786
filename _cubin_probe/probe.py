import ctypes, sys, glob
cu = ctypes.CDLL("libcuda.so.1")
def ck(r, what):
    if r != 0:
        raise SystemExit(f"{what} -> {r}")
ck(cu.cuInit(0), "init")
dev = ctypes.c_int(); ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "dev")
ctx = ctypes.c_void_p(); ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "ctx"); ck(cu.cuCtxSetCurrent(ctx), "set")
v = ctypes.c_int()
for name, a in (("optin", 97), ("reserved", 111), ("per_block", 8), ("per_sm", 81), ("cc_major", 75), ("cc_minor", 76)):
    ck(cu.cuDeviceGetAttribute(ctypes.byref(v), a, dev), name); print("device", name, v.value)
ATTR = {"max_threads": 0, "shared": 1, "const": 2, "local": 3, "regs": 4, "ptx": 5, "bin": 6,
        "max_dyn_shared": 8, "req_cluster_w": 11, "req_cluster_h": 12, "cluster_must": 14}
for path in sorted(glob.glob("*.cubin")):
    data = open(path, "rb").read()
    mod = ctypes.c_void_p(); r = cu.cuModuleLoadData(ctypes.byref(mod), data)
    if r: print(path, "load failed", r); continue
    n = ctypes.c_uint(); cu.cuModuleGetFunctionCount(ctypes.byref(n), mod)
    fs = (ctypes.c_void_p * n.value)(); cu.cuModuleEnumerateFunctions(fs, n, mod)
    for f in fs:
        nm = ctypes.c_char_p(); cu.cuFuncGetName(ctypes.byref(nm), ctypes.c_void_p(f))
        vals = {}
        for k, a in ATTR.items():
            r = cu.cuFuncGetAttribute(ctypes.byref(v), a, ctypes.c_void_p(f)); vals[k] = v.value if r == 0 else f"err{r}"
        # param info
        offs = []
        for i in range(16):
            o = ctypes.c_size_t(); s = ctypes.c_size_t()
            if cu.cuFuncGetParamInfo(ctypes.c_void_p(f), i, ctypes.byref(o), ctypes.byref(s)): break
            offs.append((o.value, s.value))
        print(path, nm.value.decode(), vals, "params", offs)
