"""boto3 against Coffer's S3 interface: reading a multipart object by its parts (get_object and
head_object with PartNumber) and get_object_attributes, as S3 documents them.

Usage: python3 boto3-parts.py BUCKET KEY, KEY a multipart object of three parts, with
COFFER_S3_ENDPOINT and the AWS_* key variables set. Prints one JSON object of what it saw; the
test (test/e2e/s3-parts.test.ts) checks it.
"""
import hashlib
import json
import sys

from botocore.exceptions import ClientError

from coffer_s3 import client

bucket, key = sys.argv[1], sys.argv[2]
s3 = client()

seen = {}
for n in (1, 2, 3):
    got = s3.get_object(Bucket=bucket, Key=key, PartNumber=n)
    body = got["Body"].read()
    seen[f"part{n}"] = [got["ResponseMetadata"]["HTTPStatusCode"], got["ContentRange"], got["PartsCount"], len(body), hashlib.md5(body).hexdigest()]
head = s3.head_object(Bucket=bucket, Key=key, PartNumber=3)
seen["head3"] = [head["ContentLength"], head["PartsCount"]]
try:
    s3.get_object(Bucket=bucket, Key=key, PartNumber=4)
    seen["part4"] = "ok"
except ClientError as e:
    seen["part4"] = [e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]]
attrs = s3.get_object_attributes(Bucket=bucket, Key=key, ObjectAttributes=["ETag", "ObjectSize", "StorageClass", "ObjectParts"], MaxParts=2)
parts = attrs["ObjectParts"]
seen["attributes"] = {
    "etag": attrs["ETag"], "size": attrs["ObjectSize"], "class": attrs["StorageClass"], "count": parts["TotalPartsCount"],
    "truncated": parts["IsTruncated"], "next": parts["NextPartNumberMarker"], "parts": [[p["PartNumber"], p["Size"]] for p in parts["Parts"]],
}
rest = s3.get_object_attributes(Bucket=bucket, Key=key, ObjectAttributes=["ObjectParts"], PartNumberMarker=2)["ObjectParts"]
seen["rest"] = [rest["IsTruncated"], [[p["PartNumber"], p["Size"]] for p in rest["Parts"]]]
print(json.dumps(seen))
