//! TLS on the RESP port: `--tls-cert-file` and `--tls-key-file` make the listening port speak
//! TLS only (rustls, ring), and `--tls-ca-cert-file` also requires each client to show a
//! certificate signed by that CA (as Redis's `tls-auth-clients yes`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

/// The files of `--tls-cert-file`, `--tls-key-file` and `--tls-ca-cert-file`.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The server's certificate chain, PEM.
    pub cert: PathBuf,
    /// Its private key, PEM.
    pub key: PathBuf,
    /// CA certificates that client certificates must chain to; None: no client certificates.
    pub client_ca: Option<PathBuf>,
}

/// Why TLS could not be set up; the flag and file are named.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file that cannot be read or holds no PEM of the kind wanted.
    #[error("{flag} {}: {why}", path.display())]
    File {
        flag: &'static str,
        path: PathBuf,
        why: String,
    },
    /// rustls refused the certificates or key (a key that does not match, say).
    #[error("TLS: {0}")]
    Refused(#[from] rustls::Error),
    /// The client CA cannot verify client certificates.
    #[error("--tls-ca-cert-file: {0}")]
    ClientCa(String),
}

fn certificates(flag: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bad = |why: String| TlsError::File {
        flag,
        path: path.to_path_buf(),
        why,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("holds no PEM certificate".into()));
    }
    Ok(certs)
}

/// The rustls server configuration of `files`.
///
/// # Errors
/// A file that cannot be read, holds no certificate or key, or a key rustls refuses.
pub fn server_config(files: &TlsFiles) -> Result<Arc<ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = certificates("--tls-cert-file", &files.cert)?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| TlsError::File {
        flag: "--tls-key-file",
        path: files.key.clone(),
        why: e.to_string(),
    })?;
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()?;
    let builder = match &files.client_ca {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let mut roots = RootCertStore::empty();
            for ca in certificates("--tls-ca-cert-file", path)? {
                roots.add(ca)?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| TlsError::ClientCa(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    Ok(Arc::new(builder.with_single_cert(chain, key)?))
}
