"""boto3 against Coffer's S3 interface: the versions API on an unversioned bucket, as an
"empty this bucket" script (Terraform's force_destroy, backup tools) uses it.

Usage: python3 boto3-versions.py BUCKET, with COFFER_S3_ENDPOINT and the AWS_* key variables set.
Prints one JSON object of what it saw; the test (test/e2e/s3-versions.test.ts) checks it.
"""
import json
import sys

from botocore.exceptions import ClientError

from coffer_s3 import client

bucket = sys.argv[1]
s3 = client()


def outcome(call):
    """"ok", or [status, code, message] of the S3 error the call answered."""
    try:
        call()
        return "ok"
    except ClientError as e:
        return [e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"], e.response["Error"].get("Message")]


BOGUS = "3HL4kqtJlcpXroDTDmjVBH40Nrjfkd"
seen = {}
for key in ["a.txt", "dir/b.txt", "dir/c.txt", "z.txt"]:
    s3.put_object(Bucket=bucket, Key=key, Body=key.encode())
listed = s3.list_object_versions(Bucket=bucket)
seen["versions"] = [[v["Key"], v["VersionId"], v["IsLatest"], v["Size"], v["StorageClass"]] for v in listed.get("Versions", [])]
seen["delete_markers"] = listed.get("DeleteMarkers", [])
seen["truncated"] = listed["IsTruncated"]
top = s3.list_object_versions(Bucket=bucket, Delimiter="/")
seen["top"] = [v["Key"] for v in top.get("Versions", [])]
seen["prefixes"] = [p["Prefix"] for p in top.get("CommonPrefixes", [])]
seen["under_dir"] = [v["Key"] for v in s3.list_object_versions(Bucket=bucket, Prefix="dir/").get("Versions", [])]
pages = s3.get_paginator("list_object_versions").paginate(Bucket=bucket, PaginationConfig={"PageSize": 1})
seen["paged"] = [[v["Key"] for v in page.get("Versions", [])] for page in pages]
seen["get_null"] = s3.get_object(Bucket=bucket, Key="a.txt", VersionId="null")["Body"].read().decode()
seen["head_null"] = s3.head_object(Bucket=bucket, Key="a.txt", VersionId="null")["ContentLength"]
seen["get_bogus"] = outcome(lambda: s3.get_object(Bucket=bucket, Key="a.txt", VersionId=BOGUS))
seen["head_bogus"] = outcome(lambda: s3.head_object(Bucket=bucket, Key="a.txt", VersionId=BOGUS))
seen["delete_bogus"] = outcome(lambda: s3.delete_object(Bucket=bucket, Key="a.txt", VersionId=BOGUS))
versioning = s3.get_bucket_versioning(Bucket=bucket)
seen["versioning"] = sorted(k for k in versioning if k != "ResponseMetadata")
s3.delete_object(Bucket=bucket, Key="a.txt", VersionId="null", BypassGovernanceRetention=True)
seen["a_after_delete"] = outcome(lambda: s3.head_object(Bucket=bucket, Key="a.txt"))
answer = s3.delete_objects(
    Bucket=bucket,
    Delete={"Objects": [{"Key": "dir/b.txt", "VersionId": "null"}, {"Key": "z.txt", "VersionId": BOGUS}]},
    BypassGovernanceRetention=True,
)
seen["deleted"] = [[d["Key"], d.get("VersionId")] for d in answer.get("Deleted", [])]
seen["errors"] = [[e["Key"], e["Code"]] for e in answer.get("Errors", [])]
seen["left"] = [v["Key"] for v in s3.list_object_versions(Bucket=bucket).get("Versions", [])]
# What force_destroy does: every version and delete marker, then the bucket.
for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
    objects = [{"Key": v["Key"], "VersionId": v["VersionId"]} for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]
    if objects:
        s3.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True}, BypassGovernanceRetention=True)
s3.delete_bucket(Bucket=bucket)
seen["bucket_after"] = outcome(lambda: s3.head_bucket(Bucket=bucket))
print(json.dumps(seen))
