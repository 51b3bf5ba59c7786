// The host side of --launcher cpp: a torch extension built by load_inline at import. It declares
// the three HIP entry points it needs itself (no HIP headers) and links against the HIP runtime
// torch already loaded, so it shares torch's runtime and queue.
#include <torch/extension.h>
extern "C" {
int hipModuleLoadData(void** module, const void* image);
int hipModuleGetFunction(void** function, void* module, const char* name);
int hipModuleLaunchKernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                          unsigned bz, unsigned lds, void* queue, void** params, void** extra);
}
// Tags of hipModuleLaunchKernel's `extra` array (hip_runtime_api.h).
#define SG_LAUNCH_PARAM_BUFFER_POINTER reinterpret_cast<void*>(1)
#define SG_LAUNCH_PARAM_BUFFER_SIZE reinterpret_cast<void*>(2)
#define SG_LAUNCH_PARAM_END reinterpret_cast<void*>(3)
static void sg_check(int rc, const char* what) {
    if (rc != 0)
        throw std::runtime_error(std::string("submitgen: ") + what + " failed with error " +
                                 std::to_string(rc));
}
int64_t sg_load(int64_t image) {
    void* module = nullptr;
    sg_check(hipModuleLoadData(&module, reinterpret_cast<const void*>(image)), "hipModuleLoadData");
    return reinterpret_cast<int64_t>(module);
}
int64_t sg_function(int64_t module, const std::string& name) {
    void* function = nullptr;
    sg_check(hipModuleGetFunction(&function, reinterpret_cast<void*>(module), name.c_str()),
             "hipModuleGetFunction");
    return reinterpret_cast<int64_t>(function);
}
void sg_launch(int64_t function, int64_t gx, int64_t gy, int64_t gz, int64_t bx, int64_t by, int64_t bz,
               int64_t lds, int64_t args, int64_t size) {
    size_t bytes = static_cast<size_t>(size);
    void* extra[] = {SG_LAUNCH_PARAM_BUFFER_POINTER, reinterpret_cast<void*>(args),
                     SG_LAUNCH_PARAM_BUFFER_SIZE, &bytes, SG_LAUNCH_PARAM_END};
    sg_check(hipModuleLaunchKernel(reinterpret_cast<void*>(function), gx, gy, gz, bx, by, bz, lds, nullptr,
                                   nullptr, extra),
             "hipModuleLaunchKernel");
}
