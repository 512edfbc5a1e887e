"""Prints infra/template.yaml as CloudFormation sees it after SAM's transform (aws-sam-translator,
offline), for the drift test (test/model.ts): the implicit resources and policies SAM adds (each
function's role with its managed policies, the API's stage and deployment) come from SAM itself
rather than from a hand-written copy of its rules.

  python sam-translate.py TEMPLATE   (the region, which decides the partition, from AWS_DEFAULT_REGION)

No AWS call is made: the translator reads only the region, and the managed-policy map it would
otherwise fetch (for policies named by name) is empty; the template's functions name none.
`AWS::Include` of the API definition is left as it is (CloudFormation expands it before SAM runs);
the drift test reads the definition itself.
"""

import json
import sys

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse


class NoManagedPolicies:
    def load(self):
        return {}


def main(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        template = yaml_parse(f.read())
    # What `sam package` would put there: the code's location does not change what is compared.
    for resource in template.get("Resources", {}).values():
        properties = resource.get("Properties") or {}
        if resource.get("Type") == "AWS::Serverless::Function" and "CodeUri" in properties:
            properties["CodeUri"] = "s3://forgebench-drift-test/code.zip"
    json.dump(transform(template, {}, NoManagedPolicies()), sys.stdout, default=str)


if __name__ == "__main__":
    main(sys.argv[1])
