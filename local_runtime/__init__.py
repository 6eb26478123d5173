"""The whole pipeline on one machine: moto's server, the stack's resources, and the functions run locally.

Everything here is built from the synthesized CDK template, so the local runtime follows the stack.
"""
