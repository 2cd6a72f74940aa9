"""Agents layer: text environments, batched runner, workers, verifiers and the agent loop.

Never imports jax (ARCHITECTURE.md). Submodules are imported on use; this package only
documents the layout:

* :mod:`skillax.agents.envs` -- environment protocol, ALFWorld, TextWorld, batched runner, experts;
* :mod:`skillax.agents.agent_loop` -- play prompts, action parsing, :class:`Trajectory`.
"""
