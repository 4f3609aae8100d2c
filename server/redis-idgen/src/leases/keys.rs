//! Where lease namespaces are kept: the interface the feature reads and writes them through.
//! `crate::ffi::namespaces` implements it on Redis (each namespace a hash, written by `HSET`
//! of absolute values, propagated as is); the unit tests on a map.

use crate::error::CommandError;

/// The namespaces, by key name.
pub trait NamespaceKeys {
    /// Every field of namespace `ns` (none when it does not exist).
    ///
    /// # Errors
    /// It is not a hash, or holds a field that is not text.
    fn read(&mut self, ns: &[u8]) -> Result<Vec<(String, String)>, CommandError>;

    /// Sets `fields` of namespace `ns` and drops any expiry it was given, and tells replicas
    /// and the AOF.
    ///
    /// # Errors
    /// The write failed.
    fn write(&mut self, ns: &[u8], fields: &[(String, String)]) -> Result<(), CommandError>;
}

impl<T: NamespaceKeys> NamespaceKeys for &mut T {
    fn read(&mut self, ns: &[u8]) -> Result<Vec<(String, String)>, CommandError> {
        (**self).read(ns)
    }

    fn write(&mut self, ns: &[u8], fields: &[(String, String)]) -> Result<(), CommandError> {
        (**self).write(ns, fields)
    }
}
