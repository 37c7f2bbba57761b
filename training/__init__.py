"""Multi-conversation GRPO training: see the open issues."""
