//! Making minisign signatures with an operator's own secret key: how a site
//! signs the bundles it carries across the gap.
//!
//! Invariant: every signature made here is a standard prehashed (`ED`)
//! minisign signature over the exact bytes handed in, so that the real
//! `minisign -Vm FILE -p KEY.pub` verifies it and [`crate::signing`] (which
//! refuses legacy ones) accepts it. Keys are read as `minisign -G` writes
//! them: encrypted with a password (scrypt), or unencrypted (`-G -W`). The
//! password is never read from a file or a flag: the caller passes it from
//! the environment or lets us ask on the terminal.

use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use thiserror::Error;

use crate::signing::PublicKey;

/// A secret key file larger than this is not read: minisign's are about
/// 230 bytes.
pub const MAX_SECRET_KEY_BYTES: u64 = 4096;

/// Where the password of an encrypted key comes from.
#[derive(Debug, Clone)]
pub enum Password {
    /// Given by the caller (`LLMGW_SIGN_PASSWORD`).
    Given(String),
    /// Asked on the controlling terminal.
    Prompt,
    /// Neither: an encrypted key is refused with a message saying how.
    Unavailable,
}

/// Why a key could not be used.
#[derive(Debug, Error)]
pub enum SignerError {
    #[error("cannot read secret key {}", path.display())]
    /// The key file could not be read.
    Io {
        /// The key file.
        path: PathBuf,
        #[source]
        /// Why it could not be read.
        source: std::io::Error,
    },
    #[error(
        "{} is not a minisign secret key (expected the two-line file `minisign -G` writes: an \
         untrusted comment, then a base64 line starting with RW)",
        path.display()
    )]
    /// The file is not a minisign secret key.
    BadKey {
        /// The key file.
        path: PathBuf,
        /// What is wrong with it, said by the chain after the message (and
        /// its own cause, if any, after it).
        #[source]
        reason: SecretKeyFault,
    },
    #[error(
        "secret key {} is encrypted and no password is available: set LLMGW_SIGN_PASSWORD, or \
         run on a terminal to be asked (a key made with `minisign -G -W` has no password)",
        path.display()
    )]
    /// The key is encrypted and there is no way to ask for its password.
    NeedsPassword {
        /// The key file.
        path: PathBuf,
    },
    /// The key did not decrypt with the password given.
    #[error("secret key {}: the password is wrong, or the key file is damaged", path.display())]
    WrongPassword {
        /// The key file.
        path: PathBuf,
        /// minisign's words for the failure.
        #[source]
        source: minisign::PError,
    },
    /// minisign could not sign with the key.
    #[error("signing with key {key_id} failed")]
    Sign {
        /// The key's id.
        key_id: String,
        /// minisign's words for the failure.
        #[source]
        source: minisign::PError,
    },
}

/// What is wrong with a secret key file: the cause of
/// [`SignerError::BadKey`]; minisign's or a decoder's own words are this
/// fault's source, not its text.
#[derive(Debug, Error)]
pub enum SecretKeyFault {
    /// The file is not UTF-8.
    #[error("it is not text")]
    NotText,
    /// The file is larger than any minisign key.
    #[error("it is over {MAX_SECRET_KEY_BYTES} bytes; minisign's are about 230")]
    TooLarge,
    /// Only comments, or nothing.
    #[error("it has no key line")]
    NoKeyLine,
    /// The key line does not decode.
    #[error("the key line is not base64")]
    NotBase64(#[source] base64::DecodeError),
    /// A public key given where the secret one belongs.
    #[error("it is a public key (KEY.pub); give the secret key `minisign -G` wrote beside it")]
    PublicKey,
    /// The key is for another algorithm.
    #[error("the key algorithm is not Ed25519 (Ed)")]
    NotEd25519,
    /// The key names a key derivation minisign does not write.
    #[error("its key derivation is neither scrypt nor none")]
    KeyDerivation,
    /// minisign itself refuses the key.
    #[error("minisign cannot read it")]
    Rejected(#[source] minisign::PError),
    /// The public half does not verify what the secret half signs.
    #[error("its secret and public halves disagree")]
    HalvesDisagree(#[source] minisign::PError),
    /// The public half cannot be written as a public key file.
    #[error("its public half is not a usable public key")]
    PublicHalf(#[source] minisign::PError),
    /// The public half, written out, is not read back as one.
    #[error("its public half is not a usable public key")]
    PublicHalfText(#[source] crate::signing::SigningError),
}

/// A decrypted secret key, ready to sign, with its public half.
pub struct SecretKey {
    sk: minisign::SecretKey,
    pk: minisign::PublicKey,
    public: PublicKey,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretKey({})", self.public.key_id())
    }
}

impl SecretKey {
    /// Reads and decrypts a secret key file as `minisign -G` writes it.
    pub fn load(path: &Path, password: Password) -> Result<Self, SignerError> {
        let io = |source| SignerError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut text = String::new();
        std::fs::File::open(path)
            .map_err(io)?
            .take(MAX_SECRET_KEY_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::InvalidData {
                    SignerError::BadKey {
                        path: path.to_path_buf(),
                        reason: SecretKeyFault::NotText,
                    }
                } else {
                    io(e)
                }
            })?;
        Self::parse(path, &text, password)
    }

    /// Decodes a secret key file's text; `path` names it in errors.
    pub fn parse(path: &Path, text: &str, password: Password) -> Result<Self, SignerError> {
        let bad = |reason: SecretKeyFault| SignerError::BadKey {
            path: path.to_path_buf(),
            reason,
        };
        if text.len() as u64 > MAX_SECRET_KEY_BYTES {
            return Err(bad(SecretKeyFault::TooLarge));
        }
        let line = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with("untrusted comment:"))
            .ok_or_else(|| bad(SecretKeyFault::NoKeyLine))?;
        let raw = BASE64
            .decode(line)
            .map_err(|e| bad(SecretKeyFault::NotBase64(e)))?;
        if raw.len() == 42 {
            return Err(bad(SecretKeyFault::PublicKey));
        }
        // sig_alg "Ed", kdf_alg ("Sc" scrypt, or 0 0 for `-W`), chk_alg "B2".
        if raw.len() < 6 || &raw[..2] != b"Ed" {
            return Err(bad(SecretKeyFault::NotEd25519));
        }
        let encrypted = match &raw[2..4] {
            b"Sc" => true,
            [0, 0] => false,
            _ => return Err(bad(SecretKeyFault::KeyDerivation)),
        };
        let sk = if encrypted {
            let boxed =
                minisign::SecretKeyBox::from_string(&format!("untrusted comment: llmgw\n{line}\n"))
                    .map_err(|e| bad(SecretKeyFault::Rejected(e)))?;
            let pw = match password {
                Password::Given(p) => Some(p),
                Password::Prompt => None,
                Password::Unavailable => {
                    return Err(SignerError::NeedsPassword {
                        path: path.to_path_buf(),
                    });
                }
            };
            boxed
                .into_secret_key(pw)
                .map_err(|source| SignerError::WrongPassword {
                    path: path.to_path_buf(),
                    source,
                })?
        } else {
            // Not `into_unencrypted_secret_key`: Debian's minisign 0.11 writes
            // `-W` keys with a zero checksum, which the crate calls corrupted.
            // The self-test below checks the key's halves agree instead.
            minisign::SecretKey::from_bytes(&raw).map_err(|e| bad(SecretKeyFault::Rejected(e)))?
        };
        let pk = minisign::PublicKey::from_secret_key(&sk)
            .map_err(|e| bad(SecretKeyFault::Rejected(e)))?;
        // `sign` with the public half verifies what it made: a damaged key
        // is refused here, not discovered by whoever verifies the bundle.
        minisign::sign(Some(&pk), &sk, Cursor::new(b"llmgw key check"), None, None)
            .map_err(|e| bad(SecretKeyFault::HalvesDisagree(e)))?;
        let pk_text = pk
            .to_box()
            .map_err(|e| bad(SecretKeyFault::PublicHalf(e)))?
            .into_string();
        let public = PublicKey::parse(&path.display().to_string(), &pk_text)
            .map_err(|e| bad(SecretKeyFault::PublicHalfText(e)))?;
        Ok(Self { sk, pk, public })
    }

    /// The public half, as trust stores and `minisign -V` take it.
    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// The key id as the minisign CLI prints it.
    pub fn key_id(&self) -> String {
        self.public.key_id()
    }

    /// A prehashed signature over exactly `data`, as the text of a
    /// `.minisig` file. `trusted_comment` is signed with it (one line).
    pub fn sign(&self, data: &[u8], trusted_comment: &str) -> Result<String, SignerError> {
        let comment = trusted_comment.replace(['\n', '\r'], " ");
        let sig = minisign::sign(
            Some(&self.pk),
            &self.sk,
            Cursor::new(data),
            Some(&comment),
            Some("signature from minisign secret key"),
        )
        .map_err(|source| SignerError::Sign {
            key_id: self.key_id(),
            source,
        })?;
        Ok(sig.into_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signing::{Signature, verify_with_trusted};

    fn write_key(dir: &Path, password: Option<&str>) -> PathBuf {
        let kp = match password {
            Some(p) => minisign::KeyPair::generate_encrypted_keypair(Some(p.into())).unwrap(),
            None => minisign::KeyPair::generate_unencrypted_keypair().unwrap(),
        };
        let path = dir.join("site.key");
        let text = kp.sk.to_box(None).unwrap().into_string();
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn unencrypted_key_signs_prehashed_and_verifies() {
        let d = tempfile::tempdir().unwrap();
        let path = write_key(d.path(), None);
        let key = SecretKey::load(&path, Password::Unavailable).unwrap();
        let text = key.sign(b"{}\n", "file:manifest.json\nx").unwrap();
        let sig = Signature::parse("manifest.json.minisig", &text).unwrap();
        assert_eq!(sig.trusted_comment(), "file:manifest.json x");
        let id = verify_with_trusted(
            "manifest.json",
            b"{}\n",
            &sig,
            std::slice::from_ref(key.public_key()),
        )
        .unwrap();
        assert_eq!(id, key.key_id());
        assert!(
            verify_with_trusted("m", b"{} \n", &sig, std::slice::from_ref(key.public_key()))
                .is_err()
        );
    }

    #[test]
    fn encrypted_key_needs_the_right_password() {
        let d = tempfile::tempdir().unwrap();
        let path = write_key(d.path(), Some("correct horse"));
        let err = SecretKey::load(&path, Password::Unavailable).unwrap_err();
        assert!(err.to_string().contains("LLMGW_SIGN_PASSWORD"), "{err}");
        let err = SecretKey::load(&path, Password::Given("wrong".into())).unwrap_err();
        assert!(err.to_string().contains("password is wrong"), "{err}");
        let key = SecretKey::load(&path, Password::Given("correct horse".into())).unwrap();
        let sig = Signature::parse("s", &key.sign(b"data", "c").unwrap()).unwrap();
        assert_eq!(sig.key_id(), key.key_id());
    }

    #[test]
    fn garbage_keys_are_named() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("k.key");
        for text in [
            "",
            "untrusted comment: x\nnot base64!\n",
            "untrusted comment: x\nRWQ=\n",
        ] {
            std::fs::write(&path, text).unwrap();
            let err = SecretKey::load(&path, Password::Unavailable).unwrap_err();
            assert!(
                err.to_string().contains("is not a minisign secret key"),
                "{err}"
            );
        }
        // A public key handed in by mistake.
        let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        std::fs::write(&path, kp.pk.to_box().unwrap().into_string()).unwrap();
        let err = SecretKey::load(&path, Password::Unavailable).unwrap_err();
        assert!(
            err.to_string().contains("is not a minisign secret key"),
            "{err}"
        );
        // An unencrypted key whose public half was changed.
        let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        let text = kp.sk.to_box(None).unwrap().into_string();
        let line = text.lines().nth(1).unwrap();
        let mut raw = BASE64.decode(line).unwrap();
        raw[54 + 8 + 32] ^= 1; // algorithms, salt, limits; key id; seed; then the public key
        std::fs::write(
            &path,
            format!("untrusted comment: x\n{}\n", BASE64.encode(&raw)),
        )
        .unwrap();
        let err = SecretKey::load(&path, Password::Unavailable).unwrap_err();
        assert!(crate::chain(&err).contains("halves disagree"), "{err}");
        // minisign's words for it are the cause, said once after the fault.
        let SignerError::BadKey {
            reason: SecretKeyFault::HalvesDisagree(why),
            ..
        } = &err
        else {
            panic!("{err:?}")
        };
        let line = crate::chain(&err);
        assert!(
            line.ends_with(&format!(
                "RW): its secret and public halves disagree: {why}"
            )),
            "{line}"
        );
        std::fs::write(&path, vec![b'a'; 5000]).unwrap();
        let err = SecretKey::load(&path, Password::Unavailable).unwrap_err();
        assert!(crate::chain(&err).contains("over 4096 bytes"), "{err}");
        let err = SecretKey::load(&d.path().join("none.key"), Password::Unavailable).unwrap_err();
        assert!(err.to_string().contains("cannot read secret key"), "{err}");
    }
}
