"""S3 on the controller: relay a controller file to the hosts (put once, look up, sign a download URL), in the
calling process with boto3. The action eagle3.trn2.s3_relay is its entry point; the compile cache and the wheelhouse
use it."""
