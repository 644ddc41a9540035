"""boto3 against Coffer's S3 interface: lists, puts, copies, gets with a Range and deletes.

Usage: python3 boto3-check.py BUCKET, with COFFER_S3_ENDPOINT and the AWS_* key variables set.
Prints one JSON object of what it saw; the test (test/e2e/s3-clients.test.ts) checks it.
"""
import hashlib
import json
import sys

from coffer_s3 import client


bucket = sys.argv[1]
s3 = client()
seen = {}
seen["buckets"] = [b["Name"] for b in s3.list_buckets()["Buckets"]]
body = b"boto3 was here: 0123456789"
put = s3.put_object(Bucket=bucket, Key="py/hello.txt", Body=body, ContentType="text/plain", Metadata={"lang": "python"})
seen["put_etag"] = put["ETag"]
seen["md5"] = '"%s"' % hashlib.md5(body).hexdigest()
s3.copy_object(Bucket=bucket, Key="py/copy.txt", CopySource={"Bucket": bucket, "Key": "py/hello.txt"})
listed = s3.list_objects_v2(Bucket=bucket, Prefix="py/")
seen["listed"] = [[o["Key"], o["Size"]] for o in listed.get("Contents", [])]
ranged = s3.get_object(Bucket=bucket, Key="py/copy.txt", Range="bytes=6-12")
seen["range"] = [ranged["ResponseMetadata"]["HTTPStatusCode"], ranged["ContentRange"], ranged["Body"].read().decode()]
head = s3.head_object(Bucket=bucket, Key="py/copy.txt")
seen["metadata"] = head["Metadata"]
s3.delete_object(Bucket=bucket, Key="py/hello.txt")
s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "py/copy.txt"}]})
seen["after_delete"] = s3.list_objects_v2(Bucket=bucket, Prefix="py/")["KeyCount"]
try:
    s3.get_object(Bucket=bucket, Key="py/hello.txt")
    seen["missing"] = "found"
except s3.exceptions.NoSuchKey:
    seen["missing"] = "NoSuchKey"
print(json.dumps(seen))
