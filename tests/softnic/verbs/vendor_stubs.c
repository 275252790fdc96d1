/* tests/softnic/verbs/vendor_stubs.c - stand-ins for the vendor libraries
   (libmlx5.so.1, libefa.so.1) that perftest and libfabric link to.  The real ones need
   rdma-core's private libibverbs interface, which the software NIC does not
   have; the software NIC is neither an mlx5 nor an EFA device, so every
   call answers "not supported", as the real libraries do for other
   devices.  perftest resolves all its symbols at start (BIND_NOW): each
   must exist with its version. */
#include <errno.h>
#include <stddef.h>

#define NOT_SUPPORTED_PTR(name) void *name(void) { errno = EOPNOTSUPP; return NULL; }
#define NOT_SUPPORTED_INT(name) int name(void) { return EOPNOTSUPP; }

#ifdef SOFTNIC_MLX5
NOT_SUPPORTED_PTR(mlx5dv_create_qp)
NOT_SUPPORTED_PTR(mlx5dv_open_device)
NOT_SUPPORTED_INT(mlx5dv_devx_general_cmd)
NOT_SUPPORTED_PTR(mlx5dv_create_mkey)
NOT_SUPPORTED_INT(mlx5dv_destroy_mkey)
NOT_SUPPORTED_PTR(mlx5dv_qp_ex_from_ibv_qp_ex)
NOT_SUPPORTED_INT(mlx5dv_crypto_login)
NOT_SUPPORTED_PTR(mlx5dv_dek_create)
NOT_SUPPORTED_INT(mlx5dv_dek_destroy)
int mlx5dv_is_supported(void *device) { (void)device; return 0; }
#endif

#ifdef SOFTNIC_EFA
NOT_SUPPORTED_PTR(efadv_create_qp_ex)
NOT_SUPPORTED_INT(efadv_query_device)
NOT_SUPPORTED_INT(efadv_query_ah)
NOT_SUPPORTED_PTR(efadv_create_cq)
NOT_SUPPORTED_PTR(efadv_cq_from_ibv_cq_ex)
#endif
