use crate::error::{check, Error, Result, Status};
use crate::sys;
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::Arc;
use std::time::Duration;

struct Inner(*mut sys::neuronmem_event_t);
// Every event function is thread-safe; destroy runs once, when the last clone goes.
unsafe impl Send for Inner {}
unsafe impl Sync for Inner {}
impl Drop for Inner {
    fn drop(&mut self) {
        unsafe { sys::neuronmem_event_destroy(self.0) }
    }
}

/// A transfer's completion, or a caller-completed event (`Client::new_event`). Cloning shares one handle;
/// it may be waited on from any thread and outlives its client.
#[derive(Clone)]
pub struct Event(Arc<Inner>);

type Callback = Box<dyn FnOnce(Result<()>) + Send + 'static>;

unsafe extern "C" fn on_ready_trampoline(error: *const sys::neuronmem_status_t, user_data: *mut c_void) {
    let callback: Box<Callback> = Box::from_raw(user_data as *mut Callback);
    let result = if error.is_null() { Ok(()) } else { Err(Error::from_borrowed(error)) };
    // A panic must not unwind into the library's thread: it is caught and reported.
    if catch_unwind(AssertUnwindSafe(move || callback(result))).is_err() {
        eprintln!("neuronmem: an on_ready callback panicked");
    }
}

impl Event {
    pub(crate) fn from_raw(raw: *mut sys::neuronmem_event_t) -> Event {
        Event(Arc::new(Inner(raw)))
    }

    pub(crate) fn raw(&self) -> *mut sys::neuronmem_event_t {
        (self.0).0
    }

    /// Whether the event is ready (succeeded or failed), without blocking.
    pub fn is_ready(&self) -> Result<bool> {
        let mut out = false;
        check(unsafe { sys::neuronmem_event_is_ready(self.raw(), &mut out) })?;
        Ok(out)
    }

    /// Blocks until ready (`None`: no limit) and returns the transfer's result, or DEADLINE_EXCEEDED.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<()> {
        let ns = match timeout {
            None => i64::MAX,
            Some(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        };
        check(unsafe { sys::neuronmem_event_wait(self.raw(), ns) })
    }

    /// The transfer's result once ready; FAILED_PRECONDITION (the outer error) before.
    pub fn result(&self) -> Result<Result<()>> {
        let mut s = ptr::null_mut();
        check(unsafe { sys::neuronmem_event_error(self.raw(), &mut s) })?;
        Ok(check(s))
    }

    /// Calls `f` exactly once with the transfer's result when the event is ready: on the thread that
    /// completes it, or at once if it is ready already. `f` must not block for long.
    pub fn on_ready<F: FnOnce(Result<()>) + Send + 'static>(&self, f: F) -> Result<()> {
        let data = Box::into_raw(Box::new(Box::new(f) as Callback));
        let r = check(unsafe {
            sys::neuronmem_event_on_ready(self.raw(), Some(on_ready_trampoline), data as *mut c_void)
        });
        if r.is_err() {
            drop(unsafe { Box::from_raw(data) }); // not registered: the callback never runs
        }
        r
    }

    /// Completes an event from `Client::new_event`: `None` succeeds; `Some(e)` fails it with `e` (an error a
    /// library call returned passes its status object on; one made with `Error::new` gets a new status).
    pub fn complete(&self, error: Option<&Error>) -> Result<()> {
        let made;
        let status = match error {
            None => ptr::null(),
            Some(e) => match &e.status {
                Some(s) => s.0 as *const _,
                None => {
                    made = Status(crate::kernel::new_status(e.code(), e.message()));
                    made.0 as *const _
                }
            },
        };
        check(unsafe { sys::neuronmem_event_complete(self.raw(), status) })
    }
}

/// The C list of events to wait for; borrows them for the call.
pub(crate) struct WaitList(Vec<*mut sys::neuronmem_event_t>);

impl WaitList {
    pub(crate) fn new(events: &[&Event]) -> WaitList {
        WaitList(events.iter().map(|e| e.raw()).collect())
    }

    pub(crate) fn raw(&self) -> sys::neuronmem_event_list_t {
        if self.0.is_empty() {
            return crate::NO_EVENTS;
        }
        sys::neuronmem_event_list_t { events: self.0.as_ptr(), num_events: self.0.len() }
    }
}
