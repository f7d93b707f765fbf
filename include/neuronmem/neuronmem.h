/* libneuronmem: the one header to include. It pulls in every public header of this version:
 *   version.h  - version macros
 *   status.h   - status (error) objects, strings, the export macro
 *   client.h   - clients, NeuronCore devices, memories and kinds, the pinned-host allocator
 *   buffer.h   - buffers, events, transfers (the copy engine)
 *   manifest.h - the placement manifest of compiled StableHLO, and the upload plan
 *   executable.h - executables: compile, query, execute on a NeuronCore, execution statistics
 * Concepts: docs/architecture.md, docs/ownership.md, docs/errors.md, docs/memory-kinds.md, docs/async.md,
 * docs/contract.md, docs/executor.md. */
#ifndef NEURONMEM_NEURONMEM_H
#define NEURONMEM_NEURONMEM_H

#include <neuronmem/buffer.h>
#include <neuronmem/client.h>
#include <neuronmem/executable.h>
#include <neuronmem/manifest.h>
#include <neuronmem/status.h>
#include <neuronmem/version.h>

#endif /* NEURONMEM_NEURONMEM_H */
