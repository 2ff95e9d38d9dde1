"""Deployment tests: the Dockerfile, compose file, manifests and scripts under deploy/.

Static tests read the files; ``test_graceful_shutdown`` starts ``python -m app``; the
``container`` tests build the image and run the compose file with Podman (see
``test_container_e2e``).
"""
