"""The alert step: data-quality alerts when a run breaks its pipeline's contract.

The modules, in the order the step uses them:

``content``   what an alert says (:class:`~recon.alert.content.Alert`, built by ``build_alert``)
``hints``     the repair hint per verdict and the SQL that lists every message of one
``text``      clipping, neutralising data-derived strings, SQL literals
``formats``   the alert as Slack-compatible webhook JSON and as a plain-text email
``channels``  the webhook and email senders (and the POST and redaction the Slack one builds on)
``slack``     the Slack notifier: Slack's incoming-webhook message, to a ``slackwebhook`` connection
``send``      ``send_alerts``: every route once per run, bookkept in ``recon.alerts``
``for_run``   ``alert_for_run``: the alerts of one stored run (the Airflow task and ``recon run``)

Channels and their connections (Airflow connection ids, resolved at send time with
:func:`recon.connections.raw_connection`, i.e. ``AIRFLOW_CONN_<ID>`` outside Airflow):

``webhook``  ``recon_alert_webhook`` (``$RECON_ALERT_WEBHOOK_CONN_ID``), conn_type ``http``:
             ``schema`` (http/https, default http), ``host``, ``port``, extra ``endpoint``
             (e.g. ``/hook``) and optional extra ``headers``; login/password become basic auth.
             The body is Slack-compatible JSON: ``{"text": ..., "blocks": [...]}``.
             A redirect is not followed: it fails the send, naming the status.
``email``    ``smtp_default`` (``$RECON_ALERT_SMTP_CONN_ID``): ``host``, ``port``, optional
             login/password, extra ``from_email`` and ``to`` (a list or a comma-separated
             string); ``ssl`` (default: port 465) and ``starttls`` (``true``: required; default:
             when the server offers it); Airflow's ``disable_ssl`` / ``disable_tls`` are honoured
             too. A login is never sent unencrypted to a host other than loopback unless extra
             ``allow_plaintext_auth`` is ``true``.
``slack``    only as a pipeline's route (below): conn_type ``slackwebhook`` as Airflow's Slack
             provider reads it: password the webhook token (or the whole URL), host the endpoint
             (default ``https://hooks.slack.com/services``); https only (http to loopback).

Routes: a pipeline's ``alerts:`` (``[{notifier: slack, connection: slack_ops}, ...]``,
:class:`recon.config.model.AlertRoute`) replaces the two default routes above; each declared
route is recorded under the channel ``<notifier>:<connection>``, the defaults under ``webhook``
and ``email``.

A route whose connection is not defined is skipped and recorded as ``skipped``. Each route is
recorded in ``recon.alerts`` under (pipeline, run_id, channel): the row is inserted (or found)
and locked before sending, and a row already ``sent`` is never sent again, so retries of the
task send nothing new. The only window for a second delivery is a crash after the receiver
accepted the alert and before the ``sent`` row committed.

The senders are plain ``smtplib`` and ``urllib``: GX's Slack and email actions render GX's own
summary inside the checkpoint, where neither the sample messages, the repair hints nor the
send-once bookkeeping can live; Airflow's notifiers would make this package import Airflow.

Alerts carry message ids, positions, sink keys and counts: never message payloads (only
whitelisted fields of the samples are rendered) and never credentials (the webhook URL, which
may embed a token, is neither logged nor recorded, nor is it in a recorded error). Data-derived
strings are escaped and clipped (``recon.alert.text``): a crafted messageId cannot add a line, a
link or a mention to the email, the webhook or the Slack text. Whatever one route raises fails
that route only; the others still go out.
"""
