"""The alert step: data-quality alerts when a run breaks its pipeline's contract.

The modules, in the order the step uses them:

``content``   what an alert says (:class:`~recon.alert.content.Alert`, built by ``build_alert``)
``hints``     the repair hint per verdict and the SQL that lists every message of one
``text``      clipping, neutralising data-derived strings, SQL literals
``formats``   the alert as Slack-compatible webhook JSON and as an email (its text, ``<pre>`` HTML)
``channels``  the notifiers' rules: no redirect, no plain-text SMTP login, errors redacted
``slack``     the Slack notifier: Slack's incoming-webhook message and its URL check
``transport`` how an alert leaves: Airflow's provider hooks (``recon_airflow.notifiers``)
``send``      ``send_alerts``: every route once per run, bookkept in ``recon.alerts``
``for_run``   ``alert_for_run``: the alerts of one stored run (the Airflow task and ``recon run``)

Channels and their connections (Airflow connection ids, read by the providers' hooks at send
time: Airflow's metadata database or secrets backend in a task, ``AIRFLOW_CONN_<ID>`` or the
configured secrets backend outside one):

``webhook``  ``recon_alert_webhook`` (``$RECON_ALERT_WEBHOOK_CONN_ID``), an ``http`` connection
             as ``HttpHook`` reads it: ``schema`` (default http), ``host`` (or a whole URL in
             it), ``port``, login/password as basic auth, the other extras as headers and
             ``HttpHook``'s options (``verify``, ``proxies``, ...); ``recon`` adds extra
             ``endpoint`` (the path, e.g. ``/hook``) and ``headers`` (a dict). The body is
             Slack-compatible JSON: ``{"text": ..., "blocks": [...]}``. A redirect is not
             followed: it fails the send, naming the status.
``email``    ``smtp_default`` (``$RECON_ALERT_SMTP_CONN_ID``), as ``SmtpHook`` reads it:
             ``host``, ``port``, optional login/password, extra ``from_email``, ``timeout``;
             SMTPS unless extra ``disable_ssl``, then STARTTLS (required) unless extra
             ``disable_tls``; ``recon`` adds extra ``to`` (a list or a comma-separated string)
             and never sends a login unencrypted to a host other than loopback unless extra
             ``allow_plaintext_auth`` is ``true``.
``slack``    only as a pipeline's route (below): a ``slackwebhook`` connection as Airflow's
             Slack provider reads it: password the webhook token (or the whole URL), host the
             endpoint (default ``https://hooks.slack.com/services``); https only (http to
             loopback); delivered only when Slack answers ``ok``.

Routes: a pipeline's ``alerts:`` (``[{notifier: slack, connection: slack_ops}, ...]``,
:class:`recon.config.model.AlertRoute`) replaces the two default routes above; each declared
route is recorded under the channel ``<notifier>:<connection>``, the defaults under ``webhook``
and ``email``.

A route whose connection is not defined is skipped and recorded as ``skipped``. Each route is
recorded in ``recon.alerts`` under (pipeline, run_id, channel): the row is inserted (or found)
and locked before sending, and a row already ``sent`` is never sent again, so retries of the
task send nothing new. The only window for a second delivery is a crash after the receiver
accepted the alert and before the ``sent`` row committed.

The messages are built here and sent by Airflow's provider hooks (``HttpHook``,
``SlackWebhookHook``, ``SmtpHook``) through the transport the wheel's ``recon_airflow``
registers (``recon.alert.transport``), so this package imports no Airflow; without that extra
installed every route is ``skipped``, saying what to install. GX's Slack and email actions are
not used: they render GX's own summary inside the checkpoint, where neither the sample
messages, the repair hints nor the send-once bookkeeping can live.

Alerts carry message ids, positions, sink keys and counts: never message payloads (only
whitelisted fields of the samples are rendered) and never credentials (the webhook URL, which
may embed a token, is neither logged nor recorded, nor is it in a recorded error). Data-derived
strings are escaped and clipped (``recon.alert.text``): a crafted messageId cannot add a line, a
link or a mention to the email, the webhook or the Slack text. Whatever one route raises fails
that route only; the others still go out.
"""
