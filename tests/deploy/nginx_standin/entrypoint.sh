#!/bin/sh
# Render the templates as the official nginx image does: only variables that are set are replaced.
set -eu
defined=$(env | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/${\1}/p' | tr '\n' ' ')
for template in /etc/nginx/templates/*.template; do
    [ -e "$template" ] || continue
    envsubst "$defined" < "$template" > "/etc/nginx/conf.d/$(basename "$template" .template)"
done
exec "$@"
