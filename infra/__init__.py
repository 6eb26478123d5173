"""The offload stack as CDK constructs: `stack.py` composes, one module per concern does the work."""
