import torch
import torch.nn as nn
import torchvision


class BackboneClassifier(nn.Module):
    """torchvision's ResNet-50 (no pretrained weights) as a backbone, its fc swapped for a new head."""

    def __init__(self, num_classes=4, dropout=0.2):
        super().__init__()
        self.backbone = torchvision.models.resnet50(weights=None)
        in_features = self.backbone.fc.in_features
        self.backbone.fc = nn.Identity()
        self.head = nn.Sequential(
            nn.Dropout(dropout),
            nn.Linear(in_features, 128),
            nn.ReLU(inplace=True),
            nn.Linear(128, num_classes),
        )

    def forward(self, images):
        features = self.backbone(images)
        return torch.log_softmax(self.head(features), dim=1)
