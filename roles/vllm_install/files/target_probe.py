"""Target probe: the Python minor version and platform of the interpreter running it (pip resolves markers and
wheels for these). Prints {"python": "X.Y", "platform": sysconfig.get_platform()} as JSON.
"""
import json
import sys
import sysconfig

if __name__ == "__main__":
    print(json.dumps({"python": "%d.%d" % sys.version_info[:2], "platform": sysconfig.get_platform()}))
