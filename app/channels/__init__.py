"""Chat channels (Telegram first): each is one more device on the gateway, built on app/device's
client and sync core, showing prompts as messages with native buttons. Never in phone builds."""
