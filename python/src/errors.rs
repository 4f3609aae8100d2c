//! The package's exceptions, each carrying the message of the Rust error it stands for.

use idgen_client::{IssueError, LeaseCallError};
use idgen_core::GenerateError;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use ticket_client::ClientError;

pyo3::create_exception!(
    idgen,
    IdgenError,
    PyException,
    "Base class of the errors idgen raises (bad arguments raise ValueError)."
);
pyo3::create_exception!(
    idgen,
    LeaseUnavailable,
    IdgenError,
    "No lease could be had: the coordinator refused, could not be reached in time, or too few \
     replicas acknowledged the grant."
);
pyo3::create_exception!(
    idgen,
    LeaseLost,
    IdgenError,
    "No live worker-ID lease right now (lost, expired, not yet renewed, or closed). Nothing was \
     issued; a new lease is being acquired in the background: retry shortly."
);
pyo3::create_exception!(
    idgen,
    ClockBehind,
    IdgenError,
    "The clock is further behind the last issued ID than max_drift_ms allows (it stepped back, \
     IDs were taken faster than 4,096 per ms, or they start above a lease's start, ahead of the \
     clock). Nothing was issued: retry later (the message says when, for a start)."
);
pyo3::create_exception!(
    idgen,
    AheadOfLease,
    IdgenError,
    "IDs ran ahead of the clock to the time the coordinator has on record for this lease; the \
     next renewal moves it. Nothing was issued: retry in a few ms."
);
pyo3::create_exception!(
    idgen,
    TimeExhausted,
    IdgenError,
    "The layout's time field is used up: choose a later epoch or more time bits."
);
pyo3::create_exception!(
    idgen,
    ForkedError,
    IdgenError,
    "The object was made before this process forked and was made with after_fork=\"refuse\": \
     make a new one in the child."
);
pyo3::create_exception!(
    idgen,
    TicketsUnavailable,
    IdgenError,
    "No ticket server gave tickets in time: the message has each server's error."
);

pyo3::create_exception!(
    idgen,
    LibraryRefused,
    IdgenError,
    "The Functions library was not installed: a newer one is on the server, or the server \
     refused (the message says which)."
);

/// The exception for an ID the leased generator did not issue.
pub fn issue_error(e: IssueError) -> PyErr {
    match e {
        IssueError::NoLease => LeaseLost::new_err(e.to_string()),
        IssueError::Generate(g) => generate_error(g),
    }
}

/// The exception for a generator's refusal.
pub fn generate_error(e: GenerateError) -> PyErr {
    let text = e.to_string();
    match e {
        GenerateError::DriftExceeded { .. } | GenerateError::StartFence { .. } => {
            ClockBehind::new_err(text)
        }
        GenerateError::NotReserved { .. } => AheadOfLease::new_err(text),
        GenerateError::TimeExhausted => TimeExhausted::new_err(text),
    }
}

/// The exception for a lease that could not be had.
pub fn lease_error(e: LeaseCallError) -> PyErr {
    LeaseUnavailable::new_err(e.to_string())
}

/// The exception for tickets that could not be had.
pub fn ticket_error(e: ClientError) -> PyErr {
    TicketsUnavailable::new_err(e.to_string())
}

/// A `ValueError` with `e`'s message: bad input, nothing issued.
pub fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("IdgenError", py.get_type::<IdgenError>())?;
    m.add("LeaseUnavailable", py.get_type::<LeaseUnavailable>())?;
    m.add("LeaseLost", py.get_type::<LeaseLost>())?;
    m.add("ClockBehind", py.get_type::<ClockBehind>())?;
    m.add("AheadOfLease", py.get_type::<AheadOfLease>())?;
    m.add("TimeExhausted", py.get_type::<TimeExhausted>())?;
    m.add("ForkedError", py.get_type::<ForkedError>())?;
    m.add("TicketsUnavailable", py.get_type::<TicketsUnavailable>())?;
    m.add("LibraryRefused", py.get_type::<LibraryRefused>())?;
    Ok(())
}
