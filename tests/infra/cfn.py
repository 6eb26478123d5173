"""Reading the synthesized template: find resources by what they are, not by their generated ids."""

from typing import Any

Template = dict[str, Any]


def resources(template: Template, resource_type: str) -> dict[str, dict[str, Any]]:
    return {lid: r for lid, r in template["Resources"].items() if r["Type"] == resource_type}


def only(template: Template, resource_type: str) -> tuple[str, dict[str, Any]]:
    found = resources(template, resource_type)
    assert len(found) == 1, f"expected one {resource_type}, found {sorted(found)}"
    return next(iter(found.items()))


def function(template: Template, entry_point: str) -> tuple[str, dict[str, Any]]:
    """The function whose handler is lambdas.handlers.<entry_point>.handler."""
    handler = f"lambdas.handlers.{entry_point}.handler"
    found = [
        (lid, r)
        for lid, r in resources(template, "AWS::Lambda::Function").items()
        if r["Properties"]["Handler"] == handler
    ]
    assert len(found) == 1, f"expected one function with handler {handler}"
    return found[0]


def logical_id(template: Template, resource_type: str, construct_path_part: str) -> str:
    """The one resource of a type whose logical id contains the given construct id (e.g. JobsTable)."""
    found = [lid for lid in resources(template, resource_type) if construct_path_part in lid]
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
