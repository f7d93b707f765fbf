// A copy-layer file that includes the client (a layer above it): check_layers.py must reject it.
#include "base/status.h"
#include "core/client.h"
