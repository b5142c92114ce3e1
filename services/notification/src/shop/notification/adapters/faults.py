"""A provider that is slow and fails now and then, on purpose: wraps a real sender so that
demos and tests show retries doing their job. Turned on by ``FaultSettings.enabled``."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable

from shop.notification.ports import Email, EmailSender, EmailUnavailable
from shop.notification.settings import FaultSettings


class FaultyEmailSender:
    def __init__(
        self,
        inner: EmailSender,
        settings: FaultSettings,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.inner = inner
        self.settings = settings
        self._random = random.Random(settings.seed)
        self._sleep = sleep

    async def send(self, email: Email) -> None:
        settings = self.settings
        await self._sleep(self._random.uniform(settings.min_latency, settings.max_latency))
        # Fails before the real send: an injected failure never delivers the e-mail, so a
        # test can count exactly one e-mail per order however many attempts it took.
        if self._random.random() < settings.failure_rate:
            raise EmailUnavailable("injected provider failure (fault injection is on)")
        await self.inner.send(email)
