//! Where a store in a bucket is and how to reach it: the settings a
//! command gives ([`S3Config`]) and the `s3://BUCKET/PREFIX` address, read.
//!
//! Invariant: an address is accepted only when its bucket is a plain S3
//! bucket name and every part of its prefix is a plain name (no empty,
//! `.` or `..` part), so a prefix never reaches outside itself.

use super::super::StoreError;

/// Where an S3 store is and how to reach it. Credentials and anything
/// not given here come from the usual `AWS_*` variables.
#[derive(Debug, Clone, Default)]
pub struct S3Config {
    /// `s3://BUCKET/PREFIX` (the prefix may be empty).
    pub url: String,
    /// The server's URL (`http://rgw.example:8080`); path-style requests
    /// are always used, as on-site servers (Ceph RGW, Garage, MinIO) want.
    pub endpoint: Option<String>,
    /// The signing region; unset, `AWS_REGION` or the client's default
    /// (on-site servers mostly accept any).
    pub region: Option<String>,
    /// An access key id and secret, for callers that hold them (a test);
    /// the CLI leaves them to `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`.
    pub credentials: Option<(String, String)>,
    /// `--blob-delivery presigned`: the S3 endpoint nodes reach (it may
    /// differ from the one the mirror uses), and how long a URL lasts.
    pub presign: Option<(String, std::time::Duration)>,
}

/// The bucket and prefix of an `s3://` URL, checked.
pub(super) fn parse_url(url: &str) -> Result<(String, String), StoreError> {
    let bad = |reason: &'static str| StoreError::S3Url {
        url: url.to_string(),
        reason,
    };
    let rest = url
        .strip_prefix("s3://")
        .ok_or_else(|| bad("it does not start with s3://"))?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty()
        || !bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    {
        return Err(bad(
            "the bucket name is empty or has characters other than a-z, 0-9, '-' and '.'",
        ));
    }
    let prefix = prefix.trim_end_matches('/');
    if !prefix.is_empty()
        && !prefix.split('/').all(|p| {
            !p.is_empty()
                && p != "."
                && p != ".."
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        })
    {
        return Err(bad(
            "the prefix has an empty, '.' or '..' part, or characters other than \
             A-Z, a-z, 0-9, '-', '_' and '.'",
        ));
    }
    Ok((bucket.to_string(), prefix.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_bucket_and_a_safe_prefix() {
        assert_eq!(
            parse_url("s3://models/site-a/store/").unwrap(),
            ("models".into(), "site-a/store".into())
        );
        assert_eq!(
            parse_url("s3://models").unwrap(),
            ("models".into(), "".into())
        );
        for bad in [
            "models/x",
            "s3:///x",
            "s3://Models/x",
            "s3://m/../x",
            "s3://m/a//b",
            "s3://m/a b",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }
}
