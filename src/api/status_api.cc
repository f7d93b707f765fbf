// C shim for status objects and the version query.
#include <neuronmem/status.h>
#include <neuronmem/version.h>

#include <string>

#include "api/shim.h"
#include "base/status.h"

#define NEURONMEM_STR2(x) #x
#define NEURONMEM_STR(x) NEURONMEM_STR2(x)

extern "C" {

neuronmem_status_code_t neuronmem_status_code(const neuronmem_status_t* status) {
  return status ? status->code : NEURONMEM_STATUS_OK;
}

neuronmem_string_t neuronmem_status_message(const neuronmem_status_t* status) {
  if (!status) return neuronmem_string_t{"", 0};
  return neuronmem_string_t{status->message.c_str(), status->message.size()};
}

void neuronmem_status_free(neuronmem_status_t* status) { neuronmem::FreeStatus(status); }

neuronmem_status_t* neuronmem_status_create(neuronmem_status_code_t code, const char* message, size_t size) {
  int64_t c = neuronmem::api::EnumValue(code);
  if (c == NEURONMEM_STATUS_OK) return nullptr;
  if (c < NEURONMEM_STATUS_CANCELLED || c > NEURONMEM_STATUS_DATA_LOSS) c = NEURONMEM_STATUS_UNKNOWN;
  NEURONMEM_API_BEGIN
  return neuronmem::MakeStatus(static_cast<neuronmem_status_code_t>(c),
                               message && size ? std::string(message, size) : std::string())
      .release();
  NEURONMEM_API_END
}

const char* neuronmem_status_code_name(neuronmem_status_code_t code) {
  switch (neuronmem::api::EnumValue(code)) {  // any int32 may arrive from C: never load it as the enum
    case NEURONMEM_STATUS_OK: return "OK";
    case NEURONMEM_STATUS_CANCELLED: return "CANCELLED";
    case NEURONMEM_STATUS_UNKNOWN: return "UNKNOWN";
    case NEURONMEM_STATUS_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case NEURONMEM_STATUS_DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case NEURONMEM_STATUS_NOT_FOUND: return "NOT_FOUND";
    case NEURONMEM_STATUS_ALREADY_EXISTS: return "ALREADY_EXISTS";
    case NEURONMEM_STATUS_PERMISSION_DENIED: return "PERMISSION_DENIED";
    case NEURONMEM_STATUS_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case NEURONMEM_STATUS_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case NEURONMEM_STATUS_ABORTED: return "ABORTED";
    case NEURONMEM_STATUS_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case NEURONMEM_STATUS_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case NEURONMEM_STATUS_INTERNAL: return "INTERNAL";
    case NEURONMEM_STATUS_UNAVAILABLE: return "UNAVAILABLE";
    case NEURONMEM_STATUS_DATA_LOSS: return "DATA_LOSS";
    default: return "UNKNOWN";
  }
}

uint32_t neuronmem_version(void) { return NEURONMEM_VERSION_NUMBER; }

const char* neuronmem_version_string(void) {
  return NEURONMEM_STR(NEURONMEM_VERSION_MAJOR) "." NEURONMEM_STR(NEURONMEM_VERSION_MINOR) "." NEURONMEM_STR(
      NEURONMEM_VERSION_PATCH);
}

}  // extern "C"
