// PJRT errors, events and the plugin-level calls (Initialize, Attributes), and the helpers every entry
// point uses (plugin.h).
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "pjrt/plugin.h"

namespace neuronmem::pjrt {

namespace {
// A PJRT_NamedValue of `type` holding `value_size` values, the value itself still to set.
PJRT_NamedValue NamedValueOf(const char* name, PJRT_NamedValue_Type type, size_t value_size) {
  PJRT_NamedValue n{};
  n.struct_size = PJRT_NamedValue_STRUCT_SIZE;
  n.name = name;
  n.name_size = std::strlen(name);
  n.type = type;
  n.value_size = value_size;
  return n;
}
}  // namespace

PJRT_NamedValue IntValue(const char* name, int64_t v) {
  PJRT_NamedValue n = NamedValueOf(name, PJRT_NamedValue_kInt64, 1);
  n.int64_value = v;
  return n;
}

namespace {
// Returned when even an error object cannot be allocated; never freed.
PJRT_Error g_out_of_memory{PJRT_Error_Code_RESOURCE_EXHAUSTED, {}};
}  // namespace

PJRT_Error* MakeError(PJRT_Error_Code code, std::string message) noexcept {
  try {
    return new PJRT_Error{code, std::move(message)};
  } catch (...) {
    return &g_out_of_memory;
  }
}

void DestroyError(PJRT_Error* e) noexcept {
  if (e != &g_out_of_memory) delete e;
}

PJRT_Error* ErrorF(PJRT_Error_Code code, const char* fmt, ...) noexcept {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  const int n = std::vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  std::string message;
  try {
    if (n >= 0 && static_cast<size_t>(n) < sizeof small) {
      message.assign(small, static_cast<size_t>(n));
    } else if (n >= 0) {
      message.resize(static_cast<size_t>(n) + 1);
      std::vsnprintf(message.data(), message.size(), fmt, ap2);
      message.resize(static_cast<size_t>(n));
    }
  } catch (...) {
    va_end(ap2);
    return &g_out_of_memory;
  }
  va_end(ap2);
  return MakeError(code, std::move(message));
}

PJRT_Error_Code CodeOf(const neuronmem_status_t* s) noexcept {
  if (!s) return PJRT_Error_Code_OK;
  const int32_t c = static_cast<int32_t>(s->code);
  // The library's codes are absl's (include/neuronmem/status.h), as PJRT's are.
  return c >= 1 && c <= PJRT_Error_Code_DATA_LOSS ? static_cast<PJRT_Error_Code>(c) : PJRT_Error_Code_UNKNOWN;
}

PJRT_Error* FromStatus(Status s, const char* fn) noexcept {
  if (!s) return nullptr;
  try {
    std::string message = fn ? std::string(fn) + ": " : std::string();
    message += s->message;
    return MakeError(CodeOf(s.get()), std::move(message));
  } catch (...) {
    return &g_out_of_memory;
  }
}

PJRT_Error* CheckArgs(const void* args, size_t struct_size, size_t min_size, const char* fn) noexcept {
  if (!args) return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT, "%s: args must not be NULL", fn);
  if (struct_size < min_size) {
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                  "%s: args->struct_size is %zu, below the %zu bytes of the fields this call uses (set it to "
                  "sizeof the args struct of a pjrt_c_api.h of version 0.%d or older)",
                  fn, struct_size, min_size, PJRT_API_MINOR);
  }
  return nullptr;
}

namespace {
PJRT_Event* ReadyPjrtEvent() {
  static PJRT_Event ready{EventRef(ReadyEvent()), false};
  return &ready;
}
}  // namespace

PJRT_Event* NewPjrtEvent(Event* adopt) {
  if (adopt == ReadyEvent()) return ReadyPjrtEvent();  // immortal: no reference to drop
  return new PJRT_Event{EventRef(adopt), false};
}

namespace {

// ---- errors

void PJRT_Error_Destroy(PJRT_Error_Destroy_Args* args) {
  if (!args || args->struct_size < offsetof(PJRT_Error_Destroy_Args, error) + sizeof(args->error)) return;
  DestroyError(args->error);
}

void PJRT_Error_Message(PJRT_Error_Message_Args* args) {
  if (!args || args->struct_size < PJRT_Error_Message_Args_STRUCT_SIZE) return;
  if (!args->error) {
    args->message = "";
    args->message_size = 0;
    return;
  }
  args->message = args->error == &g_out_of_memory ? "out of host memory" : args->error->message.c_str();
  args->message_size = std::strlen(args->message);
  if (args->error != &g_out_of_memory) args->message_size = args->error->message.size();
}

// The plugin's errors carry a code and a message, no payloads: the visitor is never called.
PJRT_Error* PJRT_Error_ForEachPayload(PJRT_Error_ForEachPayload_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Error_ForEachPayload_Args, user_arg);
  NM_PJRT_REQUIRE(args->error);
  return nullptr;
}

PJRT_Error* PJRT_Error_GetCode(PJRT_Error_GetCode_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Error_GetCode_Args, code);
  NM_PJRT_REQUIRE(args->error);
  args->code = args->error->code;
  return nullptr;
}

// ---- plugin

PJRT_Error* PJRT_Plugin_Initialize(PJRT_Plugin_Initialize_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Plugin_Initialize_Args, extension_start);
  return nullptr;
}

// The StableHLO versions the parser reads: the text forms (pretty and generic) of StableHLO 1.x.
constexpr int64_t kStablehloCurrent[] = {1, 9, 0};
constexpr int64_t kStablehloMinimum[] = {0, 9, 0};

PJRT_NamedValue Named(const char* name, int64_t v) { return IntValue(name, v); }

PJRT_NamedValue NamedList(const char* name, const int64_t* v, size_t count) {
  PJRT_NamedValue n = NamedValueOf(name, PJRT_NamedValue_kInt64List, count);
  n.int64_array_value = v;
  return n;
}

PJRT_Error* PJRT_Plugin_Attributes(PJRT_Plugin_Attributes_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Plugin_Attributes_Args, num_attributes);
  static const PJRT_NamedValue kAttributes[] = {
      Named("xla_version", 2),
      NamedList("stablehlo_current_version", kStablehloCurrent, 3),
      NamedList("stablehlo_minimum_version", kStablehloMinimum, 3),
  };
  args->attributes = kAttributes;
  args->num_attributes = sizeof kAttributes / sizeof kAttributes[0];
  return nullptr;
}

// ---- events

PJRT_Error* PJRT_Event_Destroy(PJRT_Event_Destroy_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Event_Destroy_Args, event);
  if (args->event != ReadyPjrtEvent()) delete args->event;
  return nullptr;
}

PJRT_Error* PJRT_Event_IsReady(PJRT_Event_IsReady_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Event_IsReady_Args, is_ready);
  NM_PJRT_REQUIRE(args->event);
  args->is_ready = IsReady(args->event->event.get());
  return nullptr;
}

PJRT_Error* PJRT_Event_Error(PJRT_Event_Error_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Event_Error_Args, event);
  NM_PJRT_REQUIRE(args->event);
  Event* e = args->event->event.get();
  if (!IsReady(e)) {
    return ErrorF(PJRT_Error_Code_FAILED_PRECONDITION,
                  "PJRT_Event_Error: the event is not ready (await it or use PJRT_Event_OnReady first)");
  }
  return FromStatus(CopyStatus(e->error()));
}

PJRT_Error* PJRT_Event_Await(PJRT_Event_Await_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Event_Await_Args, event);
  NM_PJRT_REQUIRE(args->event);
  if (args->event == ReadyPjrtEvent()) return nullptr;  // the small-transfer path: nothing to wait for
  Event* e = args->event->event.get();
  if (!IsReady(e) && InCallerCallback()) {
    return ErrorF(PJRT_Error_Code_FAILED_PRECONDITION,
                  "PJRT_Event_Await inside %s is refused: it could wait for the thread running the callback",
                  CallerCallbackName());
  }
  Wait(e, -1);
  return FromStatus(CopyStatus(e->error()));
}

PJRT_Error* PJRT_Event_OnReady(PJRT_Event_OnReady_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Event_OnReady_Args, user_arg);
  NM_PJRT_REQUIRE(args->event);
  NM_PJRT_REQUIRE(args->callback);
  NM_PJRT_BEGIN
  const PJRT_Event_OnReadyCallback cb = args->callback;
  void* const user_arg = args->user_arg;
  OnReady(args->event->event.get(), [cb, user_arg](const neuronmem_status_t* error) {
    CallerCallbackScope scope("a PJRT event callback (PJRT_Event_OnReady)");
    cb(FromStatus(CopyStatus(error)), user_arg);  // the callback owns the error
  });
  return nullptr;
  NM_PJRT_END
}

PJRT_Error* PJRT_Event_Create(PJRT_Event_Create_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Event_Create_Args, event);
  NM_PJRT_BEGIN
  args->event = new PJRT_Event{EventRef(NewEvent()), true};
  return nullptr;
  NM_PJRT_END
}

PJRT_Error* PJRT_Event_Set(PJRT_Event_Set_Args* args) {
  NM_PJRT_ARGS(args, PJRT_Event_Set_Args, error_message_size);
  NM_PJRT_REQUIRE(args->event);
  if (!args->event->user_created) {
    return ErrorF(PJRT_Error_Code_INVALID_ARGUMENT,
                  "PJRT_Event_Set: the event was not made by PJRT_Event_Create (the plugin completes its own)");
  }
  NM_PJRT_BEGIN
  Status error;
  const int64_t code = EnumValue(args->error_code);
  if (code != PJRT_Error_Code_OK) {
    const std::string message(args->error_message ? args->error_message : "",
                              args->error_message ? args->error_message_size : 0);
    const bool known = code >= PJRT_Error_Code_CANCELLED && code <= PJRT_Error_Code_DATA_LOSS;
    error = MakeStatus(known ? static_cast<neuronmem_status_code_t>(code) : NEURONMEM_STATUS_UNKNOWN, message);
  }
  if (!Complete(args->event->event.get(), std::move(error)))
    return ErrorF(PJRT_Error_Code_FAILED_PRECONDITION, "PJRT_Event_Set: the event is set already");
  return nullptr;
  NM_PJRT_END
}

}  // namespace

void FillErrorsAndEvents(PJRT_Api* api) {
  api->PJRT_Error_Destroy = PJRT_Error_Destroy;
  api->PJRT_Error_Message = PJRT_Error_Message;
  api->PJRT_Error_GetCode = PJRT_Error_GetCode;
  api->PJRT_Error_ForEachPayload = PJRT_Error_ForEachPayload;
  api->PJRT_Plugin_Initialize = PJRT_Plugin_Initialize;
  api->PJRT_Plugin_Attributes = PJRT_Plugin_Attributes;
  api->PJRT_Event_Destroy = PJRT_Event_Destroy;
  api->PJRT_Event_IsReady = PJRT_Event_IsReady;
  api->PJRT_Event_Error = PJRT_Event_Error;
  api->PJRT_Event_Await = PJRT_Event_Await;
  api->PJRT_Event_OnReady = PJRT_Event_OnReady;
  api->PJRT_Event_Create = PJRT_Event_Create;
  api->PJRT_Event_Set = PJRT_Event_Set;
}

}  // namespace neuronmem::pjrt
