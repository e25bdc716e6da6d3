"""The EBS census when it cannot be taken: one CloudError line that names what is missing, never a traceback,
never a key; and no boto module loaded unless --aws-region asks for it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aws_moto import FAKE_SECRET, Ec2ErrorServer, MotoServer, aws_test_env
from kubectl_pvleft.clouds.base import CloudError
from loopback import free_port

# Every test runs the census in a child Python (a clean environment and sys.modules), most against moto.
pytestmark = pytest.mark.integration

# Runs the census in a fresh interpreter and prints what a user would read: the CloudError line, or the volumes.
CENSUS = """
import json, sys
from kubectl_pvleft.clouds.base import CloudError
from kubectl_pvleft.clouds.aws.census import open_census
args = json.loads(sys.argv[1])
try:
    disks = list(open_census(**args).disks())
except CloudError as exc:
    print(exc)
    sys.exit(1)
print(json.dumps(sorted(d.handle for d in disks)))
"""


def census(env: dict[str, str], timeout: float = 60, **args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CENSUS, json.dumps(args)], env=env, check=False, capture_output=True,
                          text=True, timeout=timeout)


def one_error_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stderr == "", result.stderr  # no traceback, no warning
    lines = result.stdout.splitlines()
    assert len(lines) == 1, lines
    assert FAKE_SECRET not in lines[0]
    return lines[0]


def test_no_credentials_anywhere(tmp_path: Path, moto: MotoServer) -> None:
    line = one_error_line(census(aws_test_env(tmp_path), regions=["us-east-1"], endpoint_url=moto.endpoint))
    assert line.startswith("no AWS credentials found for ec2:DescribeVolumes:")
    assert "--aws-profile" in line and "aws sso login" in line


def test_profile_not_found(tmp_path: Path, moto: MotoServer) -> None:
    line = one_error_line(census(aws_test_env(tmp_path), regions=["us-east-1"], profile="nope",
                                 endpoint_url=moto.endpoint))
    assert line == ("AWS profile 'nope' is not in the AWS config or credentials files (--aws-profile, "
                    "AWS_PROFILE); it is needed for ec2:DescribeVolumes")
    line = one_error_line(census(aws_test_env(tmp_path, AWS_PROFILE="gone"), regions=["us-east-1"],
                                 endpoint_url=moto.endpoint))
    assert "AWS profile 'gone' is not in the AWS config" in line


def test_named_profile_is_used(tmp_path: Path, moto: MotoServer) -> None:
    moto.client("ec2").create_volume(AvailabilityZone="us-east-1a", Size=1)
    credentials = tmp_path / "credentials"
    credentials.write_text(f"[pvleft-test]\naws_access_key_id = AKIAPROFILE\naws_secret_access_key = {FAKE_SECRET}\n")
    env = aws_test_env(tmp_path, AWS_SHARED_CREDENTIALS_FILE=str(credentials))
    result = census(env, regions=["us-east-1"], profile="pvleft-test", endpoint_url=moto.endpoint)
    assert result.returncode == 0 and result.stderr == "", result
    assert json.loads(result.stdout)[0].startswith("vol-")


def test_sdk_not_installed(tmp_path: Path) -> None:
    hide_boto = "import sys; sys.modules['boto3'] = None\n"  # what an interpreter without boto3 sees on import
    result = subprocess.run([sys.executable, "-c", hide_boto + CENSUS, json.dumps({"regions": ["us-east-1"]})],
                            env=aws_test_env(tmp_path), check=False, capture_output=True, text=True, timeout=60)
    assert one_error_line(result) == "--aws-region needs boto3: pip install 'kubectl-pvleft[aws]'"


def test_iam_denies_describe_volumes(tmp_path: Path, moto: MotoServer) -> None:
    iam = moto.client("iam")
    keys = {}
    for user, actions in (("reader", ["ec2:DescribeVolumes"]), ("lister", ["ec2:DescribeInstances"])):
        iam.create_user(UserName=user)
        iam.put_user_policy(UserName=user, PolicyName="ec2-read", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}]}))
        key = iam.create_access_key(UserName=user)["AccessKey"]
        keys[user] = {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}
    moto.enforce_iam()
    try:
        check_iam_answers(tmp_path, moto, keys)
    finally:
        moto.relax_iam()


def check_iam_answers(tmp_path: Path, moto: MotoServer, keys: dict[str, dict[str, str]]) -> None:
    allowed = census(aws_test_env(tmp_path, **keys["reader"]), regions=["us-east-1"], endpoint_url=moto.endpoint)
    assert allowed.returncode == 0 and allowed.stderr == "", allowed

    denied = census(aws_test_env(tmp_path, **keys["lister"]), regions=["eu-west-1"], endpoint_url=moto.endpoint)
    line = one_error_line(denied)
    assert line.startswith("AWS denied ec2:DescribeVolumes in eu-west-1 (AccessDenied: User: arn:aws:iam::")
    assert "user/lister is not authorized to perform: ec2:DescribeVolumes" in line
    assert keys["lister"]["AWS_SECRET_ACCESS_KEY"] not in line

    unknown = census(aws_test_env(tmp_path, AWS_ACCESS_KEY_ID="AKIANOSUCHKEY0000000",
                                  AWS_SECRET_ACCESS_KEY=FAKE_SECRET), regions=["us-east-1"], endpoint_url=moto.endpoint)
    assert one_error_line(unknown).startswith(
        "AWS rejected the credentials for ec2:DescribeVolumes in us-east-1 (AuthFailure: AWS was not able to "
        "validate the provided access credentials)")


def test_ec2_unauthorized_operation(tmp_path: Path) -> None:
    # EC2's own answer to a denied call; moto's IAM evaluation says AccessDenied instead.
    message = ("You are not authorized to perform this operation. User: arn:aws:iam::123456789012:user/ops is not "
               "authorized to perform: ec2:DescribeVolumes because no identity-based policy allows the "
               "ec2:DescribeVolumes action. Encoded authorization failure message: AbCdEf0123456789xyz")
    with Ec2ErrorServer("UnauthorizedOperation", message) as server:
        env = aws_test_env(tmp_path, AWS_ACCESS_KEY_ID="AKIAOPS", AWS_SECRET_ACCESS_KEY=FAKE_SECRET)
        line = one_error_line(census(env, regions=["us-east-1"], endpoint_url=server.endpoint))
        assert server.requests == 1  # a 403 is not retried
    assert line == ("AWS denied ec2:DescribeVolumes in us-east-1 (UnauthorizedOperation: You are not authorized to "
                    "perform this operation. User: arn:aws:iam::123456789012:user/ops is not authorized to perform: "
                    "ec2:DescribeVolumes because no identity-based policy allows the ec2:DescribeVolumes action.): "
                    "the identity needs ec2:DescribeVolumes on every volume (Resource \"*\")")


@pytest.mark.parametrize("page, said", [
    # botocore reads a 5xx page that starts with <html> as a bare status...
    (b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
     "ec2:DescribeVolumes in us-east-1 failed (502: Bad Gateway)"),
    # ...and anything else that is not XML as a parse failure of its own.
    (b"<!doctype html>\n<html><title>502 Bad Gateway</title></html>",
     "ec2:DescribeVolumes in us-east-1: the answer was not EC2's (Unable to parse response"),
])
def test_a_page_that_is_not_ec2s(tmp_path: Path, page: bytes, said: str) -> None:
    with Ec2ErrorServer("", "", status=502, body=page) as server:
        env = aws_test_env(tmp_path, AWS_ACCESS_KEY_ID="AKIAOPS", AWS_SECRET_ACCESS_KEY=FAKE_SECRET)
        assert one_error_line(census(env, regions=["us-east-1"], endpoint_url=server.endpoint)).startswith(said)


@pytest.mark.parametrize("page", [
    b"<html><head><title>Sign in to the guest network</title></head><body>Accept the terms</body></html>",
    b"<?xml version='1.0'?><DescribeVolumesResponse><items/></DescribeVolumesResponse>",  # no requestId, no set
    b"<?xml version='1.0'?><DescribeVolumesResponse><requestId>r-1</requestId></DescribeVolumesResponse>",
])
def test_a_200_that_is_not_a_describe_volumes_answer_is_a_failed_census(tmp_path: Path, page: bytes) -> None:
    """A captive portal's 200 was read as "no volumes", so every EBS PV was reported missing (its data gone)."""
    with Ec2ErrorServer("", "", status=200, body=page) as server:
        env = aws_test_env(tmp_path, AWS_ACCESS_KEY_ID="AKIAOPS", AWS_SECRET_ACCESS_KEY=FAKE_SECRET)
        line = one_error_line(census(env, regions=["us-east-1"], endpoint_url=server.endpoint))
    assert line.startswith("ec2:DescribeVolumes in us-east-1: the answer was not EC2's")


def test_irsa_web_identity(tmp_path: Path, moto: MotoServer) -> None:
    # What EKS injects into a Pod whose ServiceAccount has an IAM role: no keys, a token file and a role ARN.
    # boto3's chain trades them for keys at STS (moto's here), then lists with those.
    moto.client("ec2").create_volume(AvailabilityZone="us-east-1a", Size=1)
    token = tmp_path / "token"
    token.write_text("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6b3BzOnB2bGVmdCJ9.c2ln")
    env = aws_test_env(tmp_path, AWS_ROLE_ARN="arn:aws:iam::123456789012:role/pvleft-reader",
                       AWS_WEB_IDENTITY_TOKEN_FILE=str(token), AWS_ENDPOINT_URL_STS=moto.endpoint)
    result = census(env, regions=["us-east-1"], endpoint_url=moto.endpoint)
    assert result.returncode == 0 and result.stderr == "", result
    assert json.loads(result.stdout)

    no_token = census(dict(env, AWS_WEB_IDENTITY_TOKEN_FILE=str(tmp_path / "absent")), regions=["us-east-1"],
                      endpoint_url=moto.endpoint)
    assert one_error_line(no_token) == (f"reading AWS credentials for ec2:DescribeVolumes failed ([Errno 2] No such "
                                        f"file or directory: '{tmp_path / 'absent'}')")


def test_irsa_role_refused(tmp_path: Path, moto: MotoServer) -> None:
    # STS refusing the web identity (a trust policy that does not name this ServiceAccount): moto's STS does not
    # evaluate trust policies, so a small server answers as STS does.
    refusal = (b'<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type>'
               b"<Code>AccessDenied</Code><Message>Not authorized to perform sts:AssumeRoleWithWebIdentity</Message>"
               b"</Error><RequestId>5e1f0c2a-7d3b-4a9e-8c6f-1b2d3e4f5a6b</RequestId></ErrorResponse>")
    token = tmp_path / "token"
    token.write_text("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6b3BzOnB2bGVmdCJ9.c2ln")
    with Ec2ErrorServer("", "", status=403, body=refusal) as sts:
        env = aws_test_env(tmp_path, AWS_ROLE_ARN="arn:aws:iam::123456789012:role/pvleft-reader",
                           AWS_WEB_IDENTITY_TOKEN_FILE=str(token), AWS_ENDPOINT_URL_STS=sts.endpoint)
        line = one_error_line(census(env, regions=["us-east-1"], endpoint_url=moto.endpoint))
    assert line == ("getting AWS credentials for ec2:DescribeVolumes failed: AssumeRoleWithWebIdentity said "
                    "AccessDenied: Not authorized to perform sts:AssumeRoleWithWebIdentity; check the role ARN and "
                    "its trust policy (IRSA / Pod Identity) or --aws-profile")


def test_endpoint_unreachable(tmp_path: Path) -> None:
    env = aws_test_env(tmp_path, AWS_ACCESS_KEY_ID="AKIAOPS", AWS_SECRET_ACCESS_KEY=FAKE_SECRET)
    closed = f"http://127.0.0.1:{free_port()}"
    line = one_error_line(census(env, regions=["us-east-1"], endpoint_url=closed))
    assert line.startswith(f"cannot reach EC2 in us-east-1 for ec2:DescribeVolumes (Could not connect to the "
                           f"endpoint URL: \"{closed}/\"")


def test_region_name_checked(tmp_path: Path) -> None:
    env = aws_test_env(tmp_path, AWS_ACCESS_KEY_ID="AKIAOPS", AWS_SECRET_ACCESS_KEY=FAKE_SECRET)
    assert one_error_line(census(env, regions=["us east 1"])) == "--aws-region 'us east 1' is not an AWS region name"
    with pytest.raises(CloudError, match="--aws-region needs a region name"):
        from kubectl_pvleft.clouds.aws.census import open_census
        open_census([" "])


LOADED = """
import sys
from kubectl_pvleft.cli import main as cli
for argv in (["--help"], ["leftovers", "--help"]):
    try:
        cli.main(argv)
    except SystemExit:
        pass
print("LOADED", sorted({m.split(".")[0] for m in sys.modules} & {"boto3", "botocore", "s3transfer"}))
"""


def test_no_boto_without_the_flag(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-c", LOADED], env=aws_test_env(tmp_path), check=False, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout.lower()  # the help really ran
    assert result.stdout.splitlines()[-1] == "LOADED []"
