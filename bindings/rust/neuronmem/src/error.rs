use crate::sys;
use std::fmt;

/// A status code of the C API (`neuronmem_status_code_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    Cancelled,
    Unknown,
    InvalidArgument,
    DeadlineExceeded,
    NotFound,
    AlreadyExists,
    PermissionDenied,
    ResourceExhausted,
    FailedPrecondition,
    Aborted,
    OutOfRange,
    Unimplemented,
    Internal,
    Unavailable,
    DataLoss,
}

impl Code {
    pub(crate) fn from_raw(c: sys::neuronmem_status_code_t) -> Code {
        match c {
            sys::NEURONMEM_STATUS_CANCELLED => Code::Cancelled,
            sys::NEURONMEM_STATUS_INVALID_ARGUMENT => Code::InvalidArgument,
            sys::NEURONMEM_STATUS_DEADLINE_EXCEEDED => Code::DeadlineExceeded,
            sys::NEURONMEM_STATUS_NOT_FOUND => Code::NotFound,
            sys::NEURONMEM_STATUS_ALREADY_EXISTS => Code::AlreadyExists,
            sys::NEURONMEM_STATUS_PERMISSION_DENIED => Code::PermissionDenied,
            sys::NEURONMEM_STATUS_RESOURCE_EXHAUSTED => Code::ResourceExhausted,
            sys::NEURONMEM_STATUS_FAILED_PRECONDITION => Code::FailedPrecondition,
            sys::NEURONMEM_STATUS_ABORTED => Code::Aborted,
            sys::NEURONMEM_STATUS_OUT_OF_RANGE => Code::OutOfRange,
            sys::NEURONMEM_STATUS_UNIMPLEMENTED => Code::Unimplemented,
            sys::NEURONMEM_STATUS_INTERNAL => Code::Internal,
            sys::NEURONMEM_STATUS_UNAVAILABLE => Code::Unavailable,
            sys::NEURONMEM_STATUS_DATA_LOSS => Code::DataLoss,
            _ => Code::Unknown,
        }
    }

    pub(crate) fn raw(self) -> sys::neuronmem_status_code_t {
        match self {
            Code::Cancelled => sys::NEURONMEM_STATUS_CANCELLED,
            Code::Unknown => sys::NEURONMEM_STATUS_UNKNOWN,
            Code::InvalidArgument => sys::NEURONMEM_STATUS_INVALID_ARGUMENT,
            Code::DeadlineExceeded => sys::NEURONMEM_STATUS_DEADLINE_EXCEEDED,
            Code::NotFound => sys::NEURONMEM_STATUS_NOT_FOUND,
            Code::AlreadyExists => sys::NEURONMEM_STATUS_ALREADY_EXISTS,
            Code::PermissionDenied => sys::NEURONMEM_STATUS_PERMISSION_DENIED,
            Code::ResourceExhausted => sys::NEURONMEM_STATUS_RESOURCE_EXHAUSTED,
            Code::FailedPrecondition => sys::NEURONMEM_STATUS_FAILED_PRECONDITION,
            Code::Aborted => sys::NEURONMEM_STATUS_ABORTED,
            Code::OutOfRange => sys::NEURONMEM_STATUS_OUT_OF_RANGE,
            Code::Unimplemented => sys::NEURONMEM_STATUS_UNIMPLEMENTED,
            Code::Internal => sys::NEURONMEM_STATUS_INTERNAL,
            Code::Unavailable => sys::NEURONMEM_STATUS_UNAVAILABLE,
            Code::DataLoss => sys::NEURONMEM_STATUS_DATA_LOSS,
        }
    }

    /// The canonical name, e.g. "INVALID_ARGUMENT".
    pub fn name(self) -> &'static str {
        let p = unsafe { sys::neuronmem_status_code_name(self.raw()) };
        unsafe { std::ffi::CStr::from_ptr(p) }.to_str().unwrap_or("UNKNOWN")
    }
}

/// An owned C status object (freed on drop). Status objects are immutable, so sharing them is safe.
pub(crate) struct Status(pub(crate) *mut sys::neuronmem_status_t);
unsafe impl Send for Status {}
unsafe impl Sync for Status {}
impl Drop for Status {
    fn drop(&mut self) {
        unsafe { sys::neuronmem_status_free(self.0) }
    }
}

/// A failed call: the status code and the library's message.
pub struct Error {
    code: Code,
    message: String,
    pub(crate) status: Option<Status>, // the library's object when it made the error (Event::complete passes it on)
}

/// The result of every fallible call.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error made by the binding or the caller (a kernel's error, `Event::complete`); no status object.
    pub fn new(code: Code, message: impl Into<String>) -> Error {
        Error { code, message: message.into(), status: None }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(Code::InvalidArgument, message)
    }

    /// Copies a borrowed status.
    pub(crate) unsafe fn from_borrowed(s: *const sys::neuronmem_status_t) -> Error {
        Error::new(Code::from_raw(sys::neuronmem_status_code(s)), crate::string(sys::neuronmem_status_message(s)))
    }

    pub fn code(&self) -> Code {
        self.code
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

/// An owned status (NULL = OK) as a Result; the error keeps the status object.
pub(crate) fn check(s: *mut sys::neuronmem_status_t) -> Result<()> {
    if s.is_null() {
        return Ok(());
    }
    let mut e = unsafe { Error::from_borrowed(s) };
    e.status = Some(Status(s));
    Err(e)
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.name(), self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({:?}, {:?})", self.code, self.message)
    }
}

impl std::error::Error for Error {}
