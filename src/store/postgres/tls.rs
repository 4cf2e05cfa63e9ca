//! TLS to PostgreSQL with rustls, the way libpq's `sslmode` asks (table 34.1 of
//! postgresql.org/docs/15/libpq-ssl.html): `require` encrypts and checks nothing about the
//! certificate, `verify-ca` checks its chain against the root certificates, `verify-full` also
//! that it names the host. Channel binding (SCRAM-SHA-256-PLUS) is not offered; plain SCRAM is
//! used, as by libpq's default `channel_binding=prefer` against a server that does not insist.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};

use crate::config::location::{SslMode, Target};

/// Makes one TLS connection per new database connection.
#[derive(Clone)]
pub(crate) struct MakeRustls {
    config: Arc<ClientConfig>,
}

impl MakeRustls {
    /// The client configuration `target`'s `sslmode` asks for; an error when `verify-*` finds
    /// no root certificates to verify with.
    pub(crate) fn for_target(target: &Target) -> Result<MakeRustls, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?;
        let chain = match target.ssl {
            SslMode::VerifyCa | SslMode::VerifyFull => Some(
                rustls::client::WebPkiServerVerifier::builder_with_provider(
                    Arc::new(roots(target)?),
                    provider.clone(),
                )
                .build()
                .map_err(|e| e.to_string())?,
            ),
            _ => None,
        };
        let verifier = Verifier {
            chain,
            hostname: target.ssl == SslMode::VerifyFull,
            provider,
        };
        let config = builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        Ok(MakeRustls {
            config: Arc::new(config),
        })
    }
}

/// Largest CA bundle read: Mozilla's whole root store in PEM is about 220 KB.
const MAX_ROOT_CERT_BYTES: u64 = 4 * 1024 * 1024;

fn roots(target: &Target) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    let Some(file) = target.root_cert_file() else {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        return Ok(roots);
    };
    let bytes = crate::files::read_anywhere(&file, MAX_ROOT_CERT_BYTES).map_err(|refusal| {
        format!(
            "cannot read root certificates {}: {refusal}; name a PEM file in `sslrootcert`",
            file.display()
        )
    })?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            format!(
                "sslmode={} needs root certificates: cannot read {} ({e}); name a PEM file in `sslrootcert`",
                if target.ssl == SslMode::VerifyFull { "verify-full" } else { "verify-ca" },
                file.display()
            )
        })?;
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(format!("no certificate in {}", file.display()));
    }
    Ok(roots)
}

/// How the server's certificate is checked: by `require` (and `prefer`) not at all, as libpq
/// does without a root certificate; by `verify-ca` its chain (webpki); by `verify-full` also the
/// name. The handshake's signatures are verified in every mode.
#[derive(Debug)]
struct Verifier {
    chain: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    hostname: bool,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) if !self.hostname => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

impl<S> MakeTlsConnect<S> for MakeRustls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = Stream<S>;
    type TlsConnect = Connect;
    type Error = rustls::pki_types::InvalidDnsNameError;

    fn make_tls_connect(&mut self, domain: &str) -> Result<Connect, Self::Error> {
        Ok(Connect {
            name: ServerName::try_from(domain.to_owned())?,
            connector: tokio_rustls::TlsConnector::from(self.config.clone()),
        })
    }
}

/// One connection's handshake.
pub(crate) struct Connect {
    name: ServerName<'static>,
    connector: tokio_rustls::TlsConnector,
}

impl<S> TlsConnect<S> for Connect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = Stream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Stream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            self.connector
                .connect(self.name, stream)
                .await
                .map(|s| Stream(Box::new(s)))
        })
    }
}

/// An encrypted connection.
pub(crate) struct Stream<S>(Box<tokio_rustls::client::TlsStream<S>>);

impl<S: AsyncRead + AsyncWrite + Unpin> tokio_postgres::tls::TlsStream for Stream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Stream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Stream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::{Target, roots};

    fn refusal(root_cert: &str) -> String {
        let url =
            format!("postgres://mp@db.example/fleet?sslmode=verify-full&sslrootcert={root_cert}");
        let target = Target::parse(&url, None).unwrap();
        roots(&target).err().unwrap()
    }

    #[test]
    fn a_root_certificate_path_is_read_only_as_a_bounded_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("ca.pem");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        for (path, says) in [
            ("/dev/zero", "kernel file"),
            ("/proc/self/environ", "kernel file"),
            (fifo.to_str().unwrap(), "FIFO"),
        ] {
            let why = refusal(path);
            assert!(
                why.contains(says) && why.contains("sslrootcert"),
                "{path}: {why}"
            );
        }
    }
}
