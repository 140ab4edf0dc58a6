//! Optional mutual TLS of internal RPC: a node presents its certificate and
//! accepts only gateways presenting one signed by the cluster's CA; a
//! gateway accepts only nodes whose certificate the CA signed for the host
//! name (or address) the cluster file gives them. The calls inside are
//! signed as without TLS (see [`super::auth`]); TLS adds confidentiality
//! and keeps strangers from even starting a call.

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The certificate chain in a PEM file.
pub fn load_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if chain.is_empty() {
        return Err(format!("{}: no certificate found", path.display()));
    }
    Ok(chain)
}

/// The private key in a PEM file.
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn load_roots(path: &Path) -> Result<rustls::RootCertStore, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in load_chain(path)? {
        roots
            .add(cert)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(roots)
}

/// The crypto provider, named: with both ring and aws-lc in one binary,
/// rustls will not pick one by itself.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// Where a node's or a gateway's certificate, key and the cluster CA are.
#[derive(Clone, Debug)]
pub struct TlsFiles<'a> {
    /// PEM certificate chain.
    pub cert: &'a Path,
    /// PEM private key.
    pub key: &'a Path,
    /// PEM certificate(s) of the CA that signs the other side.
    pub ca: &'a Path,
}

/// A node's TLS configuration: HTTP/2 only, client certificates required.
pub fn node_config(files: &TlsFiles<'_>) -> Result<Arc<rustls::ServerConfig>, String> {
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(load_roots(files.ca)?),
        provider(),
    )
    .build()
    .map_err(|e| format!("{}: {e}", files.ca.display()))?;
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(load_chain(files.cert)?, load_key(files.key)?)
        .map_err(|e| format!("TLS certificate and key do not fit: {e}"))?;
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(cfg))
}

/// A gateway's TLS configuration towards its nodes (the connector offers
/// HTTP/2 by ALPN).
pub fn gateway_config(files: &TlsFiles<'_>) -> Result<Arc<rustls::ClientConfig>, String> {
    let cfg = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_root_certificates(load_roots(files.ca)?)
        .with_client_auth_cert(load_chain(files.cert)?, load_key(files.key)?)
        .map_err(|e| format!("TLS certificate and key do not fit: {e}"))?;
    Ok(Arc::new(cfg))
}

/// The configuration of a gateway without TLS (it dials `http://` only,
/// so the configuration is never used).
pub(crate) fn plain_config() -> rustls::ClientConfig {
    rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("default protocol versions")
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth()
}
