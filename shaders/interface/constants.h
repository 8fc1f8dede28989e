// Constants shared by every kernel and the host.
#ifndef ATTENDRE_INTERFACE_CONSTANTS_H
#define ATTENDRE_INTERFACE_CONSTANTS_H
#include "interface/params.h"

ATT_NAMESPACE_BEGIN
// An empty slot, list entry or placement.
ATT_CONST(kInvalid, 0xFFFFFFFFu)
// Eviction candidates past the held slots are new chunk rows: payload = kNewRow | row.
ATT_CONST(kNewRow, 0x80000000u)
// Policy ids (match attendre::PolicyKind).
ATT_CONST(kPolicyFifo, 0u)
ATT_CONST(kPolicyLru, 1u)
ATT_CONST(kPolicyLfu, 2u)
ATT_CONST(kPolicyLraLast, 3u)
ATT_CONST(kPolicyLraMax, 4u)
ATT_CONST(kPolicyLraSum, 5u)
ATT_CONST(kPolicyLfa, 6u)
// Largest chunk S the insertion kernels plan for in shared memory.
ATT_CONST(kMaxChunk, 2048u)
// Attend keeps head_dim / workgroup accumulators per thread at most.
ATT_CONST(kMaxDimsPerThread, 8u)
// Score computes this many outputs per thread at most.
ATT_CONST(kMaxScoreOutputsPerThread, 16u)
ATT_NAMESPACE_END

#endif
