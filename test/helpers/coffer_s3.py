"""The boto3 client every script in test/helpers uses against Coffer's S3 interface: the
endpoint from COFFER_S3_ENDPOINT, the key from the AWS_* variables (test/helpers/s3-clients.ts
sets both), path-style addressing, and no retries, so that each error is the server's answer.
"""
import os

import boto3
from botocore.config import Config


def client():
    return boto3.client(
        "s3",
        endpoint_url=os.environ["COFFER_S3_ENDPOINT"],
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )
