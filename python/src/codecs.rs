//! The ID codecs: Snowflake decode and from-time, UUIDv7 and ULID, Sqids and sealing, from
//! idgen-core: the same code and answers as the module's SNOWFLAKE.DECODE, SNOWFLAKE.FROMTIME,
//! UUID7.NEXT, ULID.NEXT, SQIDS and IDGEN.SEAL.

use std::sync::Mutex;

use idgen_core::{
    parse_time, snowflake_at, End, Form128, Generator128, SealError, Sealer as CoreSealer,
    SqidCodec, SystemClock, DEFAULT_MAX_DRIFT_MS,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDateTime, PyString};
use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::errors::{generate_error, value_error};
use crate::fork;
use crate::snowflake_settings;

/// The fields of a Snowflake ID.
#[pyclass(frozen, module = "idgen", get_all)]
pub struct Decoded {
    /// Start of the ID's tick, Unix ms.
    unix_ms: i64,
    datacenter: u64,
    worker: u64,
    sequence: u64,
}

#[pymethods]
impl Decoded {
    fn __repr__(&self) -> String {
        format!(
            "Decoded(unix_ms={}, datacenter={}, worker={}, sequence={})",
            self.unix_ms, self.datacenter, self.worker, self.sequence
        )
    }

    fn __eq__(&self, other: &Self) -> bool {
        (self.unix_ms, self.datacenter, self.worker, self.sequence)
            == (
                other.unix_ms,
                other.datacenter,
                other.worker,
                other.sequence,
            )
    }
}

/// A Snowflake ID as a 63-bit non-negative integer, or a ValueError that says so.
fn snowflake_id(id: u64) -> PyResult<u64> {
    if id >> 63 != 0 {
        return Err(value_error(format!(
            "{id} is not a Snowflake ID: IDs are 0 to 2^63-1"
        )));
    }
    Ok(id)
}

/// Splits `id` into its fields under `layout` and `epoch_ms` (the layout's own epoch when
/// None), as SNOWFLAKE.DECODE does.
#[pyfunction]
#[pyo3(signature = (id, *, layout = "twitter", epoch_ms = None))]
pub fn decode(id: u64, layout: &str, epoch_ms: Option<i64>) -> PyResult<Decoded> {
    let settings = snowflake_settings(layout, epoch_ms)?;
    let d = settings.layout.decode(snowflake_id(id)?);
    let tick_ms = settings.layout.tick_ms();
    let unix_ms = d
        .ticks
        .checked_mul(tick_ms)
        .and_then(|ms| i64::try_from(ms).ok())
        .and_then(|ms| ms.checked_add(settings.epoch_ms))
        .ok_or_else(|| value_error(format!("{id} decodes to a time past the year 292 million")))?;
    Ok(Decoded {
        unix_ms,
        datacenter: d.datacenter,
        worker: d.worker,
        sequence: d.sequence,
    })
}

/// The lowest Snowflake ID of the tick holding `t` (the highest with `end="max"`): `t` is Unix
/// ms, an ISO-8601 string (read as UTC without an offset) or a datetime (naive read as UTC).
#[pyfunction]
#[pyo3(signature = (t, *, end = "min", layout = "twitter", epoch_ms = None))]
pub fn from_time(
    t: &Bound<'_, PyAny>,
    end: &str,
    layout: &str,
    epoch_ms: Option<i64>,
) -> PyResult<u64> {
    let end = match end {
        "min" => End::Lowest,
        "max" => End::Highest,
        other => {
            return Err(value_error(format!(
                "end={other:?}: expected \"min\" or \"max\""
            )))
        }
    };
    let settings = snowflake_settings(layout, epoch_ms)?;
    snowflake_at(&settings.layout, settings.epoch_ms, unix_ms_of(t)?, end).map_err(value_error)
}

/// Unix ms from an int, a string or a datetime.
fn unix_ms_of(t: &Bound<'_, PyAny>) -> PyResult<i64> {
    if let Ok(ms) = t.extract::<i64>() {
        return Ok(ms);
    }
    if t.is_instance_of::<PyString>() {
        return parse_time(&t.extract::<String>()?).map_err(value_error);
    }
    if t.is_instance_of::<PyDateTime>() {
        let text: String = t.call_method0("isoformat")?.extract()?;
        return parse_time(&text).map_err(value_error);
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "from_time() takes Unix ms (int), an ISO-8601 str or a datetime, not {}",
        t.get_type().name()?
    )))
}

/// A process-wide 128-bit generator, made anew in a forked child (which would otherwise
/// repeat its parent's random bits).
type Shared128 = Mutex<Option<(u64, Generator128<SystemClock, StdRng>)>>;

static UUID7: Shared128 = Mutex::new(None);
static ULID: Shared128 = Mutex::new(None);

/// The next value of `form`, strictly above the last this process made.
fn next128(shared: &Shared128, form: Form128) -> PyResult<u128> {
    let generation = fork::generation();
    let mut slot = shared.lock().unwrap_or_else(|p| p.into_inner());
    match slot.as_mut() {
        Some((g, generator)) if *g == generation => generator.next_id().map_err(generate_error),
        _ => {
            let rng = StdRng::try_from_os_rng().map_err(|e| {
                pyo3::exceptions::PyOSError::new_err(format!("no randomness from the OS: {e}"))
            })?;
            let mut generator = Generator128::new(form, SystemClock, rng, DEFAULT_MAX_DRIFT_MS);
            let first = generator.next_id().map_err(generate_error);
            *slot = Some((generation, generator));
            first
        }
    }
}

/// A UUIDv7 (RFC 9562, a 12-bit sub-ms counter kept monotonic in this process), as uuid.UUID.
#[pyfunction]
pub fn uuid7(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    make_uuid(py, next128(&UUID7, Form128::Uuid7)?)
}

/// A ULID (monotonic in this process), as its 26-character Crockford base32 text.
#[pyfunction]
pub fn ulid() -> PyResult<String> {
    let value = next128(&ULID, Form128::Ulid)?;
    let mut buf = [0u8; ::ulid::ULID_LEN];
    Ok(::ulid::Ulid(value).array_to_str(&mut buf).to_string())
}

/// Sqids: IDs shown as short strings in an alphabet of your own, decoded back exactly.
#[pyclass(frozen, module = "idgen")]
pub struct Sqids {
    codec: SqidCodec,
}

#[pymethods]
impl Sqids {
    /// `alphabet` (the Sqids default when None) and the shortest string made.
    #[new]
    #[pyo3(signature = (alphabet = None, min_length = 0))]
    fn new(alphabet: Option<&str>, min_length: u8) -> PyResult<Self> {
        let alphabet = alphabet.unwrap_or(idgen_core::sqid::DEFAULT_ALPHABET);
        let codec = SqidCodec::new(alphabet, min_length).map_err(value_error)?;
        Ok(Sqids { codec })
    }

    /// The string for `numbers` (one to 16 of them).
    fn encode(&self, numbers: Vec<u64>) -> PyResult<String> {
        self.codec.encode(&numbers).map_err(value_error)
    }

    /// The numbers of `text`; ValueError when it is not a string this alphabet makes.
    fn decode(&self, text: &str) -> PyResult<Vec<u64>> {
        self.codec.decode(text).map_err(value_error)
    }
}

/// Sealing: a keyed permutation (FF1 over AES-256) of IDs that hides their time, order and
/// count, as the module's IDGEN.SEAL does under the same key.
#[pyclass(frozen, module = "idgen")]
pub struct Sealer {
    inner: CoreSealer,
}

#[pymethods]
impl Sealer {
    /// A sealer under `key`: 32 bytes, or 64 hex digits (a seal key file's text).
    #[new]
    fn new(key: &Bound<'_, PyAny>) -> PyResult<Self> {
        let inner = if let Ok(bytes) = key.extract::<Vec<u8>>() {
            CoreSealer::new(&bytes)
        } else {
            CoreSealer::from_hex(&key.extract::<String>()?)
        };
        Ok(Sealer {
            inner: inner.map_err(value_error)?,
        })
    }

    /// The key's check value (as in INFO's seal_key_id): names the key, reveals nothing.
    #[getter]
    fn key_id(&self) -> &str {
        self.inner.key_id()
    }

    /// The sealed form of a 63-bit ID.
    fn seal(&self, id: u64) -> PyResult<u64> {
        self.inner.seal(id).map_err(seal_error)
    }

    /// The ID a sealed value came from.
    fn unseal(&self, sealed: u64) -> PyResult<u64> {
        self.inner.unseal(sealed).map_err(seal_error)
    }

    /// A UUIDv7 (uuid.UUID or int) as a v4-shaped UUID that shows no time.
    fn seal_uuid7<'py>(
        &self,
        py: Python<'py>,
        uuid: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let sealed = self.inner.seal_uuid7(uuid_int(uuid)?).map_err(seal_error)?;
        make_uuid(py, sealed)
    }

    /// The UUIDv7 a sealed UUID came from.
    fn unseal_uuid7<'py>(
        &self,
        py: Python<'py>,
        uuid: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let v7 = self
            .inner
            .unseal_uuid7(uuid_int(uuid)?)
            .map_err(seal_error)?;
        make_uuid(py, v7)
    }
}

fn seal_error(e: SealError) -> PyErr {
    value_error(e)
}

/// A uuid.UUID's 128-bit value (or an int's).
fn uuid_int(uuid: &Bound<'_, PyAny>) -> PyResult<u128> {
    match uuid.getattr("int") {
        Ok(int) => int.extract(),
        Err(_) => uuid.extract(),
    }
}

/// `uuid.UUID(int=value)`.
fn make_uuid(py: Python<'_>, value: u128) -> PyResult<Bound<'_, PyAny>> {
    /// `uuid.UUID`, `object.__setattr__` and `uuid.SafeUUID.unknown`, looked up once.
    struct Parts {
        class: Py<PyAny>,
        set: Py<PyAny>,
        unknown: Py<PyAny>,
    }
    static PARTS: PyOnceLock<Parts> = PyOnceLock::new();
    let parts = PARTS.get_or_try_init(py, || -> PyResult<Parts> {
        let uuid = py.import("uuid")?;
        Ok(Parts {
            class: uuid.getattr("UUID")?.unbind(),
            set: py
                .import("builtins")?
                .getattr("object")?
                .getattr("__setattr__")?
                .unbind(),
            unknown: uuid.getattr("SafeUUID")?.getattr("unknown")?.unbind(),
        })
    })?;
    // What `UUID(int=value)` makes, without its argument checks (the value is a u128): a new
    // object, then its two slots set as its `__init__` sets them (it refuses `setattr`).
    let class = parts.class.bind(py);
    let uuid = class.call_method1(pyo3::intern!(py, "__new__"), (class,))?;
    let set = parts.set.bind(py);
    set.call1((&uuid, pyo3::intern!(py, "int"), value))?;
    set.call1((&uuid, pyo3::intern!(py, "is_safe"), parts.unknown.bind(py)))?;
    Ok(uuid)
}
