//! RFC 3161 time-stamp tokens: the request a time-stamping authority (TSA) is sent for a
//! digest, the token taken out of its response, and the offline check of a token against the
//! digest it must stamp and the certificate a reviewer trusts. A token is a CMS `ContentInfo`
//! holding `SignedData` (RFC 5652) whose content is a `TSTInfo` (RFC 3161 §2.4.2).
//!
//! Pure: bytes in, values out. It knows no network, no clock and no ledger; which bytes a
//! checkpoint's digest is taken over belongs to `timestamps.rs`. Supported signatures: RSA
//! PKCS#1 v1.5 and ECDSA P-256, both over SHA-256 (tokens and certificates alike).

use crate::audit::problem_code::ExportCode;
use cms::cert::CertificateChoices;
use cms::content_info::ContentInfo;
use cms::signed_data::{SignedAttributes, SignedData, SignerIdentifier, SignerInfo};
use der::asn1::{Any, Int, OctetString};
use der::oid::ObjectIdentifier;
use der::{Decode, Encode};
use sha2::{Digest, Sha256};
use x509_cert::Certificate;
use x509_cert::ext::pkix::{ExtendedKeyUsage, SubjectKeyIdentifier};
use x509_cert::spki::{AlgorithmIdentifierOwned, SubjectPublicKeyInfoOwned};
use x509_tsp::{MessageImprint, TimeStampReq, TimeStampResp, TspVersion, TstInfo};

const ID_SHA_256: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.1");
const ID_SIGNED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.2");
const ID_CT_TST_INFO: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.1.4");
const ID_CONTENT_TYPE: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.3");
const ID_MESSAGE_DIGEST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.4");
const RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const SHA_256_WITH_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.11");
const ECDSA_WITH_SHA_256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.2");
const ID_CE_SUBJECT_KEY_ID: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.14");
const ID_CE_EXT_KEY_USAGE: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.37");
const ID_KP_TIME_STAMPING: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.3.8");

/// How far up a chain of certificates carried in a token the check climbs.
const MAX_CHAIN: usize = 8;

/// Why a token does not hold. Each variant is one problem code of `verify-export`
/// (docs/ledger-format.md §10.4).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not a DER time-stamp token (`timestamp_malformed`).
    #[error("not an RFC 3161 time-stamp token: {0}")]
    Malformed(String),
    /// The token stamps another digest, or not a SHA-256 one (`timestamp_imprint`).
    #[error("{0}")]
    Imprint(String),
    /// The CMS signature does not verify (`timestamp_signature`).
    #[error("{0}")]
    Signature(String),
    /// The signer is not the trusted TSA, or not a TSA (`timestamp_untrusted`).
    #[error("{0}")]
    Untrusted(String),
}

impl TokenError {
    /// The problem code `verify-export` reports it under.
    pub fn code(&self) -> ExportCode {
        match self {
            TokenError::Malformed(_) => ExportCode::TimestampMalformed,
            TokenError::Imprint(_) => ExportCode::TimestampImprint,
            TokenError::Signature(_) => ExportCode::TimestampSignature,
            TokenError::Untrusted(_) => ExportCode::TimestampUntrusted,
        }
    }
}

fn malformed(e: impl std::fmt::Display) -> TokenError {
    TokenError::Malformed(e.to_string())
}

/// What a token that holds says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The TSA's `genTime`, RFC 3339 UTC.
    pub gen_time: String,
    /// The signer certificate's subject (RFC 4514 form).
    pub signer: String,
}

/// The DER `TimeStampReq` for a SHA-256 `digest`: version 1, the given nonce (a positive
/// integer of up to eight bytes), and `certReq` set so that the TSA puts its certificate in the
/// token.
pub fn request(digest: &[u8; 32], nonce: [u8; 8]) -> Result<Vec<u8>, TokenError> {
    let mut nonce = nonce;
    // Positive and minimally encoded: no leading zero byte, high bit clear.
    nonce[0] = (nonce[0] & 0x7f) | 0x01;
    let req = TimeStampReq {
        version: TspVersion::V1,
        message_imprint: MessageImprint {
            hash_algorithm: x509_cert::spki::AlgorithmIdentifier {
                oid: ID_SHA_256,
                parameters: Some(Any::null()),
            },
            hashed_message: OctetString::new(digest.to_vec()).map_err(malformed)?,
        },
        req_policy: None,
        nonce: Some(Int::new(&nonce).map_err(malformed)?),
        cert_req: true,
        extensions: None,
    };
    req.to_der().map_err(malformed)
}

/// The token (DER `ContentInfo`) in a TSA's DER `TimeStampResp`, or why there is none.
pub fn token_from_response(response: &[u8]) -> Result<Vec<u8>, TokenError> {
    let resp = TimeStampResp::from_der(response).map_err(malformed)?;
    match resp.time_stamp_token {
        Some(token) => token.to_der().map_err(malformed),
        None => Err(TokenError::Malformed(format!(
            "the TSA did not grant a token (status {:?}, {:?})",
            resp.status.status, resp.status.status_string
        ))),
    }
}

/// Reads the certificates a reviewer trusts: PEM (one or more `CERTIFICATE` blocks) or one DER
/// certificate.
pub fn read_certificates(bytes: &[u8]) -> Result<Vec<Certificate>, String> {
    let text = bytes.trim_ascii_start();
    let certs = if text.starts_with(b"-----BEGIN") {
        Certificate::load_pem_chain(text).map_err(|e| format!("not a PEM certificate: {e}"))?
    } else {
        vec![Certificate::from_der(bytes).map_err(|e| format!("not a DER certificate: {e}"))?]
    };
    if certs.is_empty() {
        return Err("no certificate in it".to_owned());
    }
    Ok(certs)
}

/// The token's SignedData, which must encapsulate a TSTInfo.
fn signed_data(token: &[u8]) -> Result<SignedData, TokenError> {
    let info = ContentInfo::from_der(token).map_err(malformed)?;
    if info.content_type != ID_SIGNED_DATA {
        return Err(TokenError::Malformed(format!(
            "content type {} is not SignedData",
            info.content_type
        )));
    }
    let signed =
        SignedData::from_der(&info.content.to_der().map_err(malformed)?).map_err(malformed)?;
    if signed.encap_content_info.econtent_type != ID_CT_TST_INFO {
        return Err(TokenError::Malformed(format!(
            "signed content type {} is not TSTInfo",
            signed.encap_content_info.econtent_type
        )));
    }
    Ok(signed)
}

/// The TSTInfo stamps `digest`, by SHA-256.
fn check_imprint(tst: &TstInfo, digest: &[u8; 32]) -> Result<(), TokenError> {
    let imprint = &tst.message_imprint;
    if imprint.hash_algorithm.oid != ID_SHA_256 {
        return Err(TokenError::Imprint(format!(
            "the token stamps a digest by algorithm {}, not SHA-256",
            imprint.hash_algorithm.oid
        )));
    }
    if imprint.hashed_message.as_bytes() != digest {
        return Err(TokenError::Imprint(format!(
            "the token stamps digest {}, not the checkpoint's {}",
            hex(imprint.hashed_message.as_bytes()),
            hex(digest)
        )));
    }
    Ok(())
}

/// The token's one signer, digesting with SHA-256, and its signed attributes.
fn signer_of(signed: &SignedData) -> Result<(&SignerInfo, &SignedAttributes), TokenError> {
    let mut signers = signed.signer_infos.0.iter();
    let (Some(signer), None) = (signers.next(), signers.next()) else {
        return Err(malformed("a token has exactly one signer"));
    };
    if signer.digest_alg.oid != ID_SHA_256 {
        return Err(TokenError::Signature(format!(
            "signed with digest algorithm {}; this verifier checks SHA-256",
            signer.digest_alg.oid
        )));
    }
    let attrs = signer
        .signed_attrs
        .as_ref()
        .ok_or_else(|| malformed("the signer has no signed attributes"))?;
    Ok((signer, attrs))
}

/// The signed attributes sign the TSTInfo as stamped: its content type, and the SHA-256 of its
/// bytes (`tst_der`) as the message digest.
fn check_signed_attributes(attrs: &SignedAttributes, tst_der: &[u8]) -> Result<(), TokenError> {
    let attr = |oid: ObjectIdentifier| {
        attrs
            .iter()
            .find(|a| a.oid == oid)
            .and_then(|a| a.values.iter().next())
    };
    let content_type = attr(ID_CONTENT_TYPE)
        .and_then(|v| v.decode_as::<ObjectIdentifier>().ok())
        .ok_or_else(|| malformed("the signed attributes have no content type"))?;
    if content_type != ID_CT_TST_INFO {
        return Err(TokenError::Signature(format!(
            "the signed content-type attribute is {content_type}, not TSTInfo"
        )));
    }
    let message_digest = attr(ID_MESSAGE_DIGEST)
        .and_then(|v| v.decode_as::<OctetString>().ok())
        .ok_or_else(|| malformed("the signed attributes have no message digest"))?;
    if message_digest.as_bytes() != Sha256::digest(tst_der).as_slice() {
        return Err(TokenError::Signature(
            "the signed message digest is not the SHA-256 of the TSTInfo: the stamped content \
             was changed"
                .to_owned(),
        ));
    }
    Ok(())
}

/// The token's time, within the signer's certificate's validity, in RFC 3339.
fn gen_time(tst: &TstInfo, signer_cert: &Certificate) -> Result<String, TokenError> {
    let at = tst.gen_time.to_unix_duration();
    let validity = &signer_cert.tbs_certificate.validity;
    if at < validity.not_before.to_unix_duration() || at > validity.not_after.to_unix_duration() {
        return Err(TokenError::Untrusted(
            "the signer's certificate was not valid at the token's time".to_owned(),
        ));
    }
    i64::try_from(at.as_secs())
        .ok()
        .and_then(|secs| chrono::DateTime::from_timestamp(secs, at.subsec_nanos()))
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
        .ok_or_else(|| malformed("genTime out of range"))
}

/// Checks `token` offline: it is a TSTInfo signed as CMS SignedData, its message imprint is
/// SHA-256 and equals `digest`, its signed attributes hold the digest of the TSTInfo and are
/// signed by the signer certificate's key, the signer certificate is one of `trusted` or chains
/// to one of them (through certificates the token carries), allows time stamping (extended key
/// usage id-kp-timeStamping) and was valid at `genTime`.
pub fn check_token(
    token: &[u8],
    digest: &[u8; 32],
    trusted: &[Certificate],
) -> Result<Stamp, TokenError> {
    let signed = signed_data(token)?;
    let econtent = signed
        .encap_content_info
        .econtent
        .as_ref()
        .ok_or_else(|| malformed("the TSTInfo is missing"))?;
    let tst_der = econtent.value();
    let tst = TstInfo::from_der(tst_der).map_err(malformed)?;

    check_imprint(&tst, digest)?;
    let (signer, attrs) = signer_of(&signed)?;
    check_signed_attributes(attrs, tst_der)?;

    let carried: Vec<&Certificate> = signed
        .certificates
        .iter()
        .flat_map(|set| set.0.iter())
        .filter_map(|choice| match choice {
            CertificateChoices::Certificate(cert) => Some(cert),
            CertificateChoices::Other(_) => None,
        })
        .collect();
    let signer_cert = carried
        .iter()
        .copied()
        .chain(trusted.iter())
        .find(|cert| identifies(&signer.sid, cert))
        .ok_or_else(|| {
            TokenError::Untrusted(
                "the signer's certificate is neither in the token nor the one given".to_owned(),
            )
        })?;
    let signed_attrs = attrs.to_der().map_err(malformed)?;
    verify_signature(
        &signer_cert.tbs_certificate.subject_public_key_info,
        &signer.signature_algorithm,
        &signed_attrs,
        signer.signature.as_bytes(),
    )
    .map_err(|e| TokenError::Signature(format!("the token's signature does not verify: {e}")))?;

    chain(signer_cert, &carried, trusted)?;
    time_stamping(signer_cert)?;
    let gen_time = gen_time(&tst, signer_cert)?;
    Ok(Stamp {
        gen_time,
        signer: signer_cert.tbs_certificate.subject.to_string(),
    })
}

/// Whether `cert` is the one `sid` names (issuer and serial number, or subject key id).
fn identifies(sid: &SignerIdentifier, cert: &Certificate) -> bool {
    match sid {
        SignerIdentifier::IssuerAndSerialNumber(id) => {
            cert.tbs_certificate.issuer == id.issuer
                && cert.tbs_certificate.serial_number == id.serial_number
        }
        SignerIdentifier::SubjectKeyIdentifier(id) => cert
            .tbs_certificate
            .extensions
            .iter()
            .flatten()
            .filter(|ext| ext.extn_id == ID_CE_SUBJECT_KEY_ID)
            .filter_map(|ext| SubjectKeyIdentifier::from_der(ext.extn_value.as_bytes()).ok())
            .any(|ski| ski.0 == id.0),
    }
}

/// The signer is a trusted certificate, or is signed by one through at most [`MAX_CHAIN`]
/// certificates carried in the token.
fn chain(
    signer: &Certificate,
    carried: &[&Certificate],
    trusted: &[Certificate],
) -> Result<(), TokenError> {
    let mut current = signer;
    for _ in 0..MAX_CHAIN {
        if trusted.iter().any(|t| t == current) {
            return Ok(());
        }
        if trusted.iter().any(|t| issued_by(current, t)) {
            return Ok(());
        }
        match carried
            .iter()
            .copied()
            .find(|c| *c != current && issued_by(current, c))
        {
            Some(issuer) => current = issuer,
            None => break,
        }
    }
    Err(TokenError::Untrusted(format!(
        "the token's signer ({}) does not chain to the certificate given with --tsa-cert",
        signer.tbs_certificate.subject
    )))
}

/// Whether `issuer` is named as `cert`'s issuer and its key verifies `cert`'s signature.
fn issued_by(cert: &Certificate, issuer: &Certificate) -> bool {
    cert.tbs_certificate.issuer == issuer.tbs_certificate.subject
        && cert.tbs_certificate.to_der().is_ok_and(|tbs| {
            verify_signature(
                &issuer.tbs_certificate.subject_public_key_info,
                &cert.signature_algorithm,
                &tbs,
                cert.signature.raw_bytes(),
            )
            .is_ok()
        })
}

/// The certificate names id-kp-timeStamping among its extended key usages.
fn time_stamping(cert: &Certificate) -> Result<(), TokenError> {
    let allowed = cert
        .tbs_certificate
        .extensions
        .iter()
        .flatten()
        .filter(|ext| ext.extn_id == ID_CE_EXT_KEY_USAGE)
        .filter_map(|ext| ExtendedKeyUsage::from_der(ext.extn_value.as_bytes()).ok())
        .any(|eku| eku.0.contains(&ID_KP_TIME_STAMPING));
    if allowed {
        Ok(())
    } else {
        Err(TokenError::Untrusted(format!(
            "the signer's certificate ({}) is not a time-stamping certificate (no \
             id-kp-timeStamping extended key usage)",
            cert.tbs_certificate.subject
        )))
    }
}

/// Verifies `signature` over `message` with the key in `spki`, by `algorithm`: RSA PKCS#1 v1.5
/// or ECDSA P-256, over SHA-256.
fn verify_signature(
    spki: &SubjectPublicKeyInfoOwned,
    algorithm: &AlgorithmIdentifierOwned,
    message: &[u8],
    signature: &[u8],
) -> Result<(), String> {
    use rsa::signature::Verifier;
    let key = spki.subject_public_key.raw_bytes();
    if algorithm.oid == RSA_ENCRYPTION || algorithm.oid == SHA_256_WITH_RSA {
        use rsa::pkcs1::DecodeRsaPublicKey;
        let key = rsa::RsaPublicKey::from_pkcs1_der(key)
            .map_err(|e| format!("not an RSA public key: {e}"))?;
        let signature = rsa::pkcs1v15::Signature::try_from(signature)
            .map_err(|e| format!("not an RSA signature: {e}"))?;
        rsa::pkcs1v15::VerifyingKey::<Sha256>::new(key)
            .verify(message, &signature)
            .map_err(|_| "RSA signature mismatch".to_owned())
    } else if algorithm.oid == ECDSA_WITH_SHA_256 {
        let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(key)
            .map_err(|_| "not a P-256 public key".to_owned())?;
        let signature = p256::ecdsa::DerSignature::from_bytes(signature)
            .map_err(|e| format!("not an ECDSA signature: {e}"))?;
        key.verify(message, &signature)
            .map_err(|_| "ECDSA signature mismatch".to_owned())
    } else {
        Err(format!(
            "signature algorithm {} is not supported (RSA or ECDSA P-256 with SHA-256)",
            algorithm.oid
        ))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests;
