"""Pieces every method loop shares: generation records -> trainer batches, the policy engine."""
