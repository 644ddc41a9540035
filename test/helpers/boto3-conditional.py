"""boto3 against Coffer's S3 interface: conditional writes (If-None-Match: *, If-Match) on
put_object and complete_multipart_upload, as S3 documents them. Debian's botocore does not
know the IfNoneMatch/IfMatch parameters yet, so the headers are added before boto3 signs.

Usage: python3 boto3-conditional.py BUCKET, with COFFER_S3_ENDPOINT and the AWS_* key variables set.
Prints one JSON object of what it saw; the test (test/e2e/s3-conditional.test.ts) checks it.
"""
import json
import sys

from botocore.exceptions import ClientError

from coffer_s3 import client

bucket = sys.argv[1]
s3 = client()

extra = {}


def add_headers(request, **_):
    for name, value in extra.items():
        request.headers[name] = value


s3.meta.events.register("before-sign.s3", add_headers)


def conditional(call, **headers):
    """Runs the call with these headers, signed."""
    extra.clear()
    extra.update(headers)
    try:
        return call()
    finally:
        extra.clear()


def outcome(call, **headers):
    """"ok", or [status, code, condition] of the S3 error the call answered."""
    try:
        conditional(call, **headers)
        return "ok"
    except ClientError as e:
        return [e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"], e.response["Error"].get("Condition")]


seen = {}
seen["first"] = outcome(lambda: s3.put_object(Bucket=bucket, Key="once.txt", Body=b"first"), **{"If-None-Match": "*"})
seen["second"] = outcome(lambda: s3.put_object(Bucket=bucket, Key="once.txt", Body=b"second"), **{"If-None-Match": "*"})
seen["body"] = s3.get_object(Bucket=bucket, Key="once.txt")["Body"].read().decode()
etag = s3.head_object(Bucket=bucket, Key="once.txt")["ETag"]
seen["match_wrong"] = outcome(lambda: s3.put_object(Bucket=bucket, Key="once.txt", Body=b"third"), **{"If-Match": '"0123456789abcdef0123456789abcdef"'})
seen["match_right"] = outcome(lambda: s3.put_object(Bucket=bucket, Key="once.txt", Body=b"fourth"), **{"If-Match": etag})
seen["match_missing"] = outcome(lambda: s3.put_object(Bucket=bucket, Key="none.txt", Body=b"x"), **{"If-Match": etag})
seen["body_after"] = s3.get_object(Bucket=bucket, Key="once.txt")["Body"].read().decode()

upload = s3.create_multipart_upload(Bucket=bucket, Key="once.txt")["UploadId"]
part = s3.upload_part(Bucket=bucket, Key="once.txt", UploadId=upload, PartNumber=1, Body=b"multipart")
parts = {"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]}
seen["complete_refused"] = outcome(
    lambda: s3.complete_multipart_upload(Bucket=bucket, Key="once.txt", UploadId=upload, MultipartUpload=parts), **{"If-None-Match": "*"})
seen["still_open"] = [u["UploadId"] for u in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])] == [upload]
current = s3.head_object(Bucket=bucket, Key="once.txt")["ETag"]
seen["complete_if_match"] = outcome(
    lambda: s3.complete_multipart_upload(Bucket=bucket, Key="once.txt", UploadId=upload, MultipartUpload=parts), **{"If-Match": current})
seen["body_multipart"] = s3.get_object(Bucket=bucket, Key="once.txt")["Body"].read().decode()
print(json.dumps(seen))
