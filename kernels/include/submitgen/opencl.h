/* submitgen/opencl.h: the OpenCL C work-item functions and scalar/vector types for a clang that
 * has neither opencl-c.h nor the ROCm device libraries (the bundled clang of the ziglang wheel).
 * submitgen includes it before every .cl source it builds with such a clang (-include); with
 * ROCm, clang's own header and the device libraries are used instead. */
#ifndef SUBMITGEN_OPENCL_H
#define SUBMITGEN_OPENCL_H

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
typedef __INTPTR_TYPE__ intptr_t;
typedef __UINTPTR_TYPE__ uintptr_t;

#define SG_CL_VEC_(t)                                   \
  typedef t t##2 __attribute__((ext_vector_type(2)));   \
  typedef t t##3 __attribute__((ext_vector_type(3)));   \
  typedef t t##4 __attribute__((ext_vector_type(4)));   \
  typedef t t##8 __attribute__((ext_vector_type(8)));   \
  typedef t t##16 __attribute__((ext_vector_type(16)));
SG_CL_VEC_(char)
SG_CL_VEC_(uchar)
SG_CL_VEC_(short)
SG_CL_VEC_(ushort)
SG_CL_VEC_(int)
SG_CL_VEC_(uint)
SG_CL_VEC_(long)
SG_CL_VEC_(ulong)
SG_CL_VEC_(float)
#undef SG_CL_VEC_

#define SG_CL_FN_ static inline __attribute__((always_inline, overloadable))

SG_CL_FN_ size_t get_local_id(uint d) {
  return d == 0 ? __builtin_amdgcn_workitem_id_x() : d == 1 ? __builtin_amdgcn_workitem_id_y()
       : d == 2 ? __builtin_amdgcn_workitem_id_z() : 0;
}
SG_CL_FN_ size_t get_group_id(uint d) {
  return d == 0 ? __builtin_amdgcn_workgroup_id_x() : d == 1 ? __builtin_amdgcn_workgroup_id_y()
       : d == 2 ? __builtin_amdgcn_workgroup_id_z() : 0;
}
SG_CL_FN_ size_t get_local_size(uint d) {
  return d == 0 ? __builtin_amdgcn_workgroup_size_x() : d == 1 ? __builtin_amdgcn_workgroup_size_y()
       : d == 2 ? __builtin_amdgcn_workgroup_size_z() : 1;
}
SG_CL_FN_ size_t get_global_size(uint d) {
  return d == 0 ? __builtin_amdgcn_grid_size_x() : d == 1 ? __builtin_amdgcn_grid_size_y()
       : d == 2 ? __builtin_amdgcn_grid_size_z() : 1;
}
SG_CL_FN_ size_t get_num_groups(uint d) { return get_global_size(d) / get_local_size(d); }
/* Global offsets are always 0 for kernels launched through HIP. */
SG_CL_FN_ size_t get_global_offset(uint d) { (void)d; return 0; }
SG_CL_FN_ size_t get_global_id(uint d) { return get_group_id(d) * get_local_size(d) + get_local_id(d); }
SG_CL_FN_ uint get_work_dim(void) { return 1; }

typedef uint cl_mem_fence_flags;
#define CLK_LOCAL_MEM_FENCE 1
#define CLK_GLOBAL_MEM_FENCE 2
SG_CL_FN_ void barrier(cl_mem_fence_flags flags) {
  (void)flags;
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
#undef SG_CL_FN_

#endif /* SUBMITGEN_OPENCL_H */
