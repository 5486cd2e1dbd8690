"""What a person on this machine allows: consent to start or reach what a flow names, programs,
exposure, API keys."""
