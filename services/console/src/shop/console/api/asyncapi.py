"""The services' AsyncAPI documents, rendered for people (and downloadable as committed)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from shop.console.api.dependencies import LOGIN_REQUIRED, AsyncApiDocuments, ServicePath
from shop.console.api.rendering import render

router = APIRouter(dependencies=[LOGIN_REQUIRED])


@router.get("/asyncapi")
async def documents(request: Request, folder: AsyncApiDocuments) -> Response:
    views = [folder.document(service) for service in folder.services()]
    return render(request, "asyncapi_index.html", documents=views)


@router.get("/asyncapi/{service}")
async def document(request: Request, service: ServicePath, folder: AsyncApiDocuments) -> Response:
    return render(request, "asyncapi.html", document=folder.document(service))


@router.get("/asyncapi/{service}/document.json")
async def raw_document(service: ServicePath, folder: AsyncApiDocuments) -> Response:
    return Response(
        folder.raw(service),
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="{service}.asyncapi.json"'},
    )
