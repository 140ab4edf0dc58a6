//! S3 errors: the only file that names S3 error codes.
//!
//! Codes and statuses follow AWS's published error table
//! (<https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html>).
//! Failures with no S3 meaning become `InternalError` and are logged with
//! the request id.

use std::fmt::Write as _;

use http::StatusCode;

use crate::xml_escape::escape;

/// An error answered to an S3 client.
#[derive(Debug)]
pub enum S3Error {
    /// 403 AccessDenied.
    AccessDenied(String),
    /// 403 AccessDenied for a signed request carrying headers its signature
    /// does not cover; the names, lower-case, in request order.
    HeadersNotSigned(Vec<String>),
    /// 400 AuthorizationHeaderMalformed; the region we expect, if relevant.
    AuthorizationHeaderMalformed(String, Option<String>),
    /// 400 AuthorizationQueryParametersError.
    AuthorizationQueryParametersError(String),
    /// 400 BadDigest: a supplied digest did not match the data.
    BadDigest(String),
    /// 409 BucketAlreadyOwnedByYou.
    BucketAlreadyOwnedByYou(String),
    /// 409 BucketNotEmpty.
    BucketNotEmpty(String),
    /// 400 EntityTooLarge.
    EntityTooLarge(String),
    /// 400 EntityTooSmall.
    EntityTooSmall(String),
    /// 400 IllegalLocationConstraintException.
    IllegalLocationConstraint(String),
    /// 400 IncompleteBody.
    IncompleteBody(String),
    /// 507 InsufficientStorage: the disks are full (AWS has no such error;
    /// the status is HTTP's "Insufficient Storage").
    InsufficientStorage,
    /// 500 InternalError (the cause is logged, not sent).
    Internal(String),
    /// 403 InvalidAccessKeyId.
    InvalidAccessKeyId,
    /// 400 InvalidArgument, with the argument's name and value.
    InvalidArgument(String, Option<(String, String)>),
    /// 400 InvalidBucketName.
    InvalidBucketName(String),
    /// 400 InvalidDigest: a supplied digest is malformed.
    InvalidDigest(String),
    /// 400 InvalidPart.
    InvalidPart(String),
    /// 400 InvalidPartOrder.
    InvalidPartOrder,
    /// 416 InvalidPartNumber.
    InvalidPartNumber,
    /// 416 InvalidRange, with the object size.
    InvalidRange(u64),
    /// 400 InvalidRequest.
    InvalidRequest(String),
    /// 400 InvalidStorageClass.
    InvalidStorageClass,
    /// 400 InvalidToken: a session token this server did not issue.
    InvalidToken,
    /// 403 InvalidObjectState: the operation is not valid for the
    /// object's storage class.
    InvalidObjectState(String),
    /// 400 InvalidURI.
    InvalidUri,
    /// 400 KeyTooLongError.
    KeyTooLong,
    /// 400 MalformedXML.
    MalformedXml(String),
    /// 400 MaxMessageLengthExceeded.
    MaxMessageLengthExceeded,
    /// 400 MaxPostPreDataLengthExceeded: a POST form's fields before the
    /// file are over S3's 20 KB.
    MaxPostPreDataLengthExceeded,
    /// 400 MetadataTooLarge.
    MetadataTooLarge,
    /// 405 MethodNotAllowed.
    MethodNotAllowed(String),
    /// 411 MissingContentLength.
    MissingContentLength,
    /// 400 MissingRequestBodyError.
    MissingRequestBody,
    /// 404 NoSuchBucket.
    NoSuchBucket(String),
    /// 404 NoSuchKey.
    NoSuchKey(String),
    /// 404 NoSuchUpload.
    NoSuchUpload,
    /// 404 NoSuchVersion.
    NoSuchVersion,
    /// 404 NoSuchTagSet.
    NoSuchTagSet,
    /// 404 NoSuchBucketPolicy.
    NoSuchBucketPolicy,
    /// 404 NoSuchCORSConfiguration.
    NoSuchCorsConfiguration,
    /// 404 NoSuchLifecycleConfiguration.
    NoSuchLifecycleConfiguration,
    /// 409 ConditionalRequestConflict.
    ConditionalRequestConflict,
    /// 400 InvalidTag.
    InvalidTag(String),
    /// 400 BadRequest.
    BadRequest(String),
    /// 400 MalformedPolicy.
    MalformedPolicy(String),
    /// 400 IncorrectNumberOfFilesInPostRequest.
    IncorrectNumberOfFiles,
    /// 400 MalformedACLError.
    MalformedAclError,
    /// 403 AccessForbidden (a CORS request no rule allows).
    AccessForbidden(String),
    /// Another error, answered with extra response headers.
    WithHeaders(Box<S3Error>, Vec<(&'static str, String)>),
    /// 501 NotImplemented.
    NotImplemented(String),
    /// 304 Not Modified (no body).
    NotModified,
    /// 412 PreconditionFailed, naming the condition.
    PreconditionFailed(&'static str),
    /// 403 RequestTimeTooSkewed.
    RequestTimeTooSkewed,
    /// 400 RequestTimeout: the client stopped sending.
    RequestTimeout,
    /// 503 ServiceUnavailable: not enough disks answered.
    ServiceUnavailable(String),
    /// 403 SignatureDoesNotMatch, with what we signed (for debugging).
    SignatureDoesNotMatch {
        /// Our string to sign.
        string_to_sign: String,
        /// Our canonical request.
        canonical_request: String,
    },
    /// 400 XAmzContentSHA256Mismatch.
    ContentSha256Mismatch,
}

impl S3Error {
    /// The S3 error code.
    pub fn code(&self) -> &'static str {
        use S3Error::*;
        match self {
            AccessDenied(_) | HeadersNotSigned(_) => "AccessDenied",
            AuthorizationHeaderMalformed(..) => "AuthorizationHeaderMalformed",
            AuthorizationQueryParametersError(_) => "AuthorizationQueryParametersError",
            BadDigest(_) => "BadDigest",
            BucketAlreadyOwnedByYou(_) => "BucketAlreadyOwnedByYou",
            BucketNotEmpty(_) => "BucketNotEmpty",
            EntityTooLarge(_) => "EntityTooLarge",
            EntityTooSmall(_) => "EntityTooSmall",
            IllegalLocationConstraint(_) => "IllegalLocationConstraintException",
            IncompleteBody(_) => "IncompleteBody",
            InsufficientStorage => "InsufficientStorage",
            Internal(_) => "InternalError",
            InvalidAccessKeyId => "InvalidAccessKeyId",
            InvalidArgument(..) => "InvalidArgument",
            InvalidBucketName(_) => "InvalidBucketName",
            InvalidDigest(_) => "InvalidDigest",
            InvalidPart(_) => "InvalidPart",
            InvalidPartOrder => "InvalidPartOrder",
            InvalidPartNumber => "InvalidPartNumber",
            InvalidRange(_) => "InvalidRange",
            InvalidRequest(_) => "InvalidRequest",
            InvalidStorageClass => "InvalidStorageClass",
            InvalidToken => "InvalidToken",
            InvalidObjectState(_) => "InvalidObjectState",
            InvalidUri => "InvalidURI",
            KeyTooLong => "KeyTooLongError",
            MalformedXml(_) => "MalformedXML",
            MaxMessageLengthExceeded => "MaxMessageLengthExceeded",
            MaxPostPreDataLengthExceeded => "MaxPostPreDataLengthExceeded",
            MetadataTooLarge => "MetadataTooLarge",
            MethodNotAllowed(_) => "MethodNotAllowed",
            MissingContentLength => "MissingContentLength",
            MissingRequestBody => "MissingRequestBodyError",
            NoSuchBucket(_) => "NoSuchBucket",
            NoSuchKey(_) => "NoSuchKey",
            NoSuchUpload => "NoSuchUpload",
            NoSuchVersion => "NoSuchVersion",
            NoSuchTagSet => "NoSuchTagSet",
            NoSuchBucketPolicy => "NoSuchBucketPolicy",
            NoSuchCorsConfiguration => "NoSuchCORSConfiguration",
            NoSuchLifecycleConfiguration => "NoSuchLifecycleConfiguration",
            ConditionalRequestConflict => "ConditionalRequestConflict",
            InvalidTag(_) => "InvalidTag",
            BadRequest(_) => "BadRequest",
            MalformedPolicy(_) => "MalformedPolicy",
            MalformedAclError => "MalformedACLError",
            AccessForbidden(_) => "AccessForbidden",
            IncorrectNumberOfFiles => "IncorrectNumberOfFilesInPostRequest",
            WithHeaders(inner, _) => inner.code(),
            NotImplemented(_) => "NotImplemented",
            NotModified => "NotModified",
            PreconditionFailed(_) => "PreconditionFailed",
            RequestTimeTooSkewed => "RequestTimeTooSkewed",
            RequestTimeout => "RequestTimeout",
            ServiceUnavailable(_) => "ServiceUnavailable",
            SignatureDoesNotMatch { .. } => "SignatureDoesNotMatch",
            ContentSha256Mismatch => "XAmzContentSHA256Mismatch",
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        use S3Error::*;
        match self {
            NotModified => StatusCode::NOT_MODIFIED,
            AccessDenied(_)
            | HeadersNotSigned(_)
            | InvalidObjectState(_)
            | InvalidAccessKeyId
            | RequestTimeTooSkewed
            | SignatureDoesNotMatch { .. } => StatusCode::FORBIDDEN,
            NoSuchBucket(_)
            | NoSuchKey(_)
            | NoSuchUpload
            | NoSuchVersion
            | NoSuchTagSet
            | NoSuchBucketPolicy
            | NoSuchCorsConfiguration
            | NoSuchLifecycleConfiguration => StatusCode::NOT_FOUND,
            ConditionalRequestConflict => StatusCode::CONFLICT,
            AccessForbidden(_) => StatusCode::FORBIDDEN,
            InvalidTag(_)
            | BadRequest(_)
            | MalformedPolicy(_)
            | IncorrectNumberOfFiles
            | MalformedAclError => StatusCode::BAD_REQUEST,
            WithHeaders(inner, _) => inner.status(),
            MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            BucketAlreadyOwnedByYou(_) | BucketNotEmpty(_) => StatusCode::CONFLICT,
            MissingContentLength => StatusCode::LENGTH_REQUIRED,
            PreconditionFailed(_) => StatusCode::PRECONDITION_FAILED,
            InvalidRange(_) | InvalidPartNumber => StatusCode::RANGE_NOT_SATISFIABLE,
            Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            NotImplemented(_) => StatusCode::NOT_IMPLEMENTED,
            ServiceUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            InsufficientStorage => StatusCode::INSUFFICIENT_STORAGE,
            AuthorizationHeaderMalformed(..)
            | AuthorizationQueryParametersError(_)
            | BadDigest(_)
            | EntityTooLarge(_)
            | EntityTooSmall(_)
            | IllegalLocationConstraint(_)
            | IncompleteBody(_)
            | InvalidArgument(..)
            | InvalidBucketName(_)
            | InvalidDigest(_)
            | InvalidPart(_)
            | InvalidPartOrder
            | InvalidRequest(_)
            | InvalidStorageClass
            | InvalidToken
            | InvalidUri
            | KeyTooLong
            | MalformedXml(_)
            | MaxMessageLengthExceeded
            | MaxPostPreDataLengthExceeded
            | MetadataTooLarge
            | MissingRequestBody
            | RequestTimeout
            | ContentSha256Mismatch => StatusCode::BAD_REQUEST,
        }
    }

    /// The human-readable message.
    pub fn message(&self) -> String {
        use S3Error::*;
        match self {
            AccessDenied(m)
            | AuthorizationHeaderMalformed(m, _)
            | AuthorizationQueryParametersError(m)
            | BadDigest(m)
            | EntityTooLarge(m)
            | EntityTooSmall(m)
            | IllegalLocationConstraint(m)
            | IncompleteBody(m)
            | InvalidArgument(m, _)
            | InvalidDigest(m)
            | InvalidPart(m)
            | InvalidRequest(m)
            | InvalidObjectState(m)
            | MalformedXml(m)
            | MethodNotAllowed(m)
            | NotImplemented(m)
            | ServiceUnavailable(m) => m.clone(),
            HeadersNotSigned(_) => "There were headers present in the request which were not signed".into(),
            BucketAlreadyOwnedByYou(_) => "Your previous request to create the named bucket succeeded and you already own it.".into(),
            BucketNotEmpty(_) => "The bucket you tried to delete is not empty".into(),
            InsufficientStorage => "Storage is full: the disks have reached their free-space reserve. Delete objects or add capacity.".into(),
            Internal(_) => "We encountered an internal error. Please try again.".into(),
            InvalidAccessKeyId => "The AWS Access Key Id you provided does not exist in our records.".into(),
            InvalidBucketName(_) => "The specified bucket is not valid.".into(),
            InvalidPartOrder => "The list of parts was not in ascending order. Parts must be ordered by part number.".into(),
            InvalidPartNumber => "The requested partnumber is not satisfiable".into(),
            InvalidRange(_) => "The requested range is not satisfiable".into(),
            InvalidStorageClass => "The storage class you specified is not valid".into(),
            InvalidToken => "The provided token is malformed or otherwise invalid.".into(),
            InvalidUri => "Couldn't parse the specified URI.".into(),
            KeyTooLong => "Your key is too long".into(),
            MaxMessageLengthExceeded => "Your request was too big.".into(),
            MaxPostPreDataLengthExceeded => "Your POST request fields preceding the upload file were too large.".into(),
            MetadataTooLarge => "Your metadata headers exceed the maximum allowed metadata size.".into(),
            MissingContentLength => "You must provide the Content-Length HTTP header.".into(),
            MissingRequestBody => "Request Body is empty".into(),
            NoSuchBucket(_) => "The specified bucket does not exist".into(),
            NoSuchKey(_) => "The specified key does not exist.".into(),
            NoSuchUpload => "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.".into(),
            NoSuchVersion => "The specified version does not exist.".into(),
            NoSuchTagSet => "The TagSet does not exist".into(),
            NoSuchBucketPolicy => "The bucket policy does not exist".into(),
            NoSuchCorsConfiguration => "The CORS configuration does not exist".into(),
            NoSuchLifecycleConfiguration => "The lifecycle configuration does not exist".into(),
            ConditionalRequestConflict => "A conflicting operation occurred. If using PutObject you can retry the request. If using multipart upload you should initiate another CreateMultipartUpload request and re-upload each part.".into(),
            InvalidTag(m) | BadRequest(m) | MalformedPolicy(m) | AccessForbidden(m) => m.clone(),
            IncorrectNumberOfFiles => "POST requires exactly one file upload per request.".into(),
            MalformedAclError => "The XML you provided was not well-formed or did not validate against our published schema.".into(),
            WithHeaders(inner, _) => inner.message(),
            NotModified => "Not Modified".into(),
            PreconditionFailed(_) => "At least one of the pre-conditions you specified did not hold".into(),
            RequestTimeTooSkewed => "The difference between the request time and the current time is too large.".into(),
            RequestTimeout => "Your socket connection to the server was not read from or written to within the timeout period. Idle connections will be closed.".into(),
            SignatureDoesNotMatch { .. } => "The request signature we calculated does not match the signature you provided. Check your key and signing method.".into(),
            ContentSha256Mismatch => "The provided 'x-amz-content-sha256' header does not match what was computed.".into(),
        }
    }

    fn extra_fields(&self, out: &mut String) {
        use S3Error::*;
        if let WithHeaders(inner, _) = self {
            return inner.extra_fields(out);
        }
        let mut field = |name: &str, value: &str| {
            let _ = write!(out, "<{name}>{}</{name}>", escape(value));
        };
        match self {
            AuthorizationHeaderMalformed(_, Some(region)) => field("Region", region),
            HeadersNotSigned(names) => field("HeadersNotSigned", &names.join(", ")),
            BucketAlreadyOwnedByYou(b)
            | BucketNotEmpty(b)
            | NoSuchBucket(b)
            | InvalidBucketName(b) => field("BucketName", b),
            NoSuchKey(k) => field("Key", k),
            InvalidArgument(_, Some((name, value))) => {
                field("ArgumentName", name);
                field("ArgumentValue", value);
            }
            PreconditionFailed(c) => field("Condition", c),
            InvalidRange(size) => field("ActualObjectSize", &size.to_string()),
            SignatureDoesNotMatch {
                string_to_sign,
                canonical_request,
            } => {
                field("StringToSign", string_to_sign);
                field("CanonicalRequest", canonical_request);
            }
            _ => {}
        }
    }

    /// The XML error document S3 sends for this error.
    pub fn to_xml(&self, resource: &str, request_id: &str, host_id: &str) -> String {
        let mut out = String::with_capacity(256);
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>");
        let _ = write!(
            out,
            "<Code>{}</Code><Message>{}</Message>",
            self.code(),
            escape(&self.message())
        );
        self.extra_fields(&mut out);
        let _ = write!(
            out,
            "<Resource>{}</Resource><RequestId>{}</RequestId><HostId>{}</HostId></Error>",
            escape(resource),
            request_id,
            host_id
        );
        out
    }

    /// Whether this answer ends its connection's reads: the client sends
    /// too slowly, or more than it may (whatever headers are added).
    pub fn stops_reading(&self) -> bool {
        match self {
            S3Error::RequestTimeout | S3Error::MaxPostPreDataLengthExceeded => true,
            S3Error::WithHeaders(inner, _) => inner.stops_reading(),
            _ => false,
        }
    }
}

impl std::fmt::Display for S3Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code(), self.message())
    }
}

impl std::error::Error for S3Error {}

impl From<lifecycle_rules::ConfigError> for S3Error {
    fn from(e: lifecycle_rules::ConfigError) -> S3Error {
        match e {
            lifecycle_rules::ConfigError::MalformedXml(m) => S3Error::MalformedXml(m),
            lifecycle_rules::ConfigError::InvalidArgument(m) => S3Error::InvalidArgument(m, None),
            lifecycle_rules::ConfigError::InvalidRequest(m) => S3Error::InvalidRequest(m),
        }
    }
}

#[cfg(feature = "placement")]
impl From<placement::Error> for S3Error {
    fn from(e: placement::Error) -> Self {
        use placement::Error as P;
        match e {
            P::NoSuchBucket { bucket } => S3Error::NoSuchBucket(bucket),
            P::NoSuchKey { key, .. } => S3Error::NoSuchKey(key),
            P::NoSuchUpload => S3Error::NoSuchUpload,
            P::NoSuchVersion => S3Error::NoSuchVersion,
            P::IsDeleteMarker => S3Error::MethodNotAllowed(
                "The specified method is not allowed against this resource.".into(),
            ),
            P::PreconditionFailed => S3Error::PreconditionFailed("If-Match"),
            P::ConditionalConflict => S3Error::ConditionalRequestConflict,
            P::BucketExists { bucket } => S3Error::BucketAlreadyOwnedByYou(bucket),
            P::BucketNotEmpty { bucket } => S3Error::BucketNotEmpty(bucket),
            P::DiskFull => S3Error::InsufficientStorage,
            P::TierUnavailable(why) | P::LockTimeout(why) | P::SetOffline(why) | P::Moved(why) => {
                S3Error::ServiceUnavailable(why)
            }
            P::WriteQuorum { needed, got } => S3Error::ServiceUnavailable(format!(
                "Not enough disks are available to store the data safely ({got} of {needed} needed). Please try again."
            )),
            P::ReadQuorum { needed, got } => S3Error::ServiceUnavailable(format!(
                "Not enough disks are available to read the data correctly ({got} of {needed} needed). Please try again."
            )),
            P::Body(b) => match b.downcast::<S3Error>() {
                Ok(s3) => *s3,
                Err(other) => S3Error::Internal(other.to_string()),
            },
            other => S3Error::Internal(other.to_string()),
        }
    }
}

/// Result alias for S3 handlers.
pub type S3Result<T> = Result<T, S3Error>;
