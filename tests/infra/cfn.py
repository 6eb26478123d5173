"""Reading the synthesized template: find resources by what they are, not by their generated ids."""

import re
from typing import Any

Template = dict[str, Any]


def resources(template: Template, resource_type: str) -> dict[str, dict[str, Any]]:
    return {lid: r for lid, r in template["Resources"].items() if r["Type"] == resource_type}


def only(template: Template, resource_type: str) -> tuple[str, dict[str, Any]]:
    found = resources(template, resource_type)
    assert len(found) == 1, f"expected one {resource_type}, found {sorted(found)}"
    return next(iter(found.items()))


def functions(template: Template, entry_point: str) -> list[tuple[str, dict[str, Any]]]:
    """Every function whose handler is lambdas.handlers.<entry_point>.handler (the workers: one per group)."""
    handler = f"lambdas.handlers.{entry_point}.handler"
    return [
        (lid, r)
        for lid, r in resources(template, "AWS::Lambda::Function").items()
        if r["Properties"]["Handler"] == handler
    ]


def function(template: Template, entry_point: str) -> tuple[str, dict[str, Any]]:
    """The function whose handler is lambdas.handlers.<entry_point>.handler; for the worker, the shared
    one (`FunctionsWorkerFunction…`: a group's id carries its suffix, `FunctionsWorker180s1024MB…`)."""
    found = [
        f
        for f in functions(template, entry_point)
        if re.fullmatch(r"Functions[A-Za-z]+Function[0-9A-F]{8}", f[0])
    ]
    assert len(found) == 1, f"expected one function with handler lambdas.handlers.{entry_point}.handler"
    return found[0]


def concrete(name: str, value: Any) -> str:
    """An environment value as the function will read it: what CloudFormation resolves at deploy time
    (a Ref, a GetAtt) made a placeholder string, a joined string (the JSON of queue URLs) joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(concrete(name, part) for part in parts)
    return f"resolved-{name.lower()}"


def logical_id(template: Template, resource_type: str, construct_path_part: str) -> str:
    """The one resource of a type whose logical id contains the given construct id (e.g. JobsTable);
    of several (`QueuesQueue` and a worker group's `QueuesQueue180s1024MB…`), the one named exactly."""
    found = [lid for lid in resources(template, resource_type) if construct_path_part in lid]
    if len(found) > 1:
        found = [lid for lid in found if re.fullmatch(rf".*{construct_path_part}[0-9A-F]{{8}}", lid)]
    assert len(found) == 1, f"expected one {resource_type} named like {construct_path_part}: {found}"
    return found[0]


def role_statements(template: Template, role_ref: dict[str, Any]) -> list[dict[str, Any]]:
    """Every policy statement attached to the role a function refers to (Fn::GetAtt role.Arn)."""
    role_id = role_ref["Fn::GetAtt"][0]
    statements = []
    for policy in resources(template, "AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def grants(statements: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(action, resource) pairs, resources rendered as compact text: 'Arn(QueuesQueue...)' or '...'."""
    pairs = set()
    for statement in statements:
        assert statement["Effect"] == "Allow"
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        targets = (
            statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        )
        pairs |= {(action, render(target)) for action in actions for target in targets}
    return pairs


def render(value: Any) -> str:
    """CloudFormation intrinsics as short text, e.g. Arn(TablesJobsTable...)/index/*."""
    if isinstance(value, str):
        return value
    if "Fn::GetAtt" in value:
        name, attribute = value["Fn::GetAtt"]
        return f"{attribute}({name})"
    if "Ref" in value:
        return f"Ref({value['Ref']})"
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(render(part) for part in parts)
    raise AssertionError(f"unexpected intrinsic {value}")
